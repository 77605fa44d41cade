package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shoal-db/shoal/config"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// k8sManifests are the objects of deploy/k8s, decoded strictly (an unknown
// or misspelt field fails) into the Kubernetes API types.
type k8sManifests struct {
	statefulSet *appsv1.StatefulSet
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	pdb         *policyv1.PodDisruptionBudget
	netpol      *networkingv1.NetworkPolicy
	images      []k8sImage // kustomization.yaml's images
}

// k8sImage is a kustomize image override.
type k8sImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
}

func loadK8sManifests(t *testing.T) k8sManifests {
	t.Helper()
	root, err := ModuleRoot()
	require.NoError(t, err)
	dir := filepath.Join(root, "deploy", "k8s")
	kust, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	var k struct {
		APIVersion string     `json:"apiVersion"`
		Kind       string     `json:"kind"`
		Resources  []string   `json:"resources"`
		Images     []k8sImage `json:"images"`
	}
	require.NoError(t, yaml.UnmarshalStrict(kust, &k))
	require.Equal(t, "Kustomization", k.Kind)
	m := k8sManifests{services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{},
		secrets: map[string]*corev1.Secret{}, images: k.Images}
	for _, res := range k.Resources {
		data, err := os.ReadFile(filepath.Join(dir, res))
		require.NoError(t, err)
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			if strings.TrimSpace(stripYAMLComments(doc)) == "" {
				continue
			}
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(doc), &meta), "%s #%d", res, i)
			where := fmt.Sprintf("%s #%d (%s %s)", res, i, meta.APIVersion, meta.Kind)
			var obj any
			switch meta.APIVersion + "/" + meta.Kind {
			case "apps/v1/StatefulSet":
				require.Nil(t, m.statefulSet, "one StatefulSet")
				m.statefulSet = &appsv1.StatefulSet{}
				obj = m.statefulSet
			case "v1/Service":
				obj = &corev1.Service{}
			case "v1/ConfigMap":
				obj = &corev1.ConfigMap{}
			case "policy/v1/PodDisruptionBudget":
				m.pdb = &policyv1.PodDisruptionBudget{}
				obj = m.pdb
			case "v1/Secret":
				obj = &corev1.Secret{}
			case "networking.k8s.io/v1/NetworkPolicy":
				require.Nil(t, m.netpol, "one NetworkPolicy")
				m.netpol = &networkingv1.NetworkPolicy{}
				obj = m.netpol
			default:
				t.Fatalf("%s: unexpected object", where)
			}
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), obj), where)
			switch o := obj.(type) {
			case *corev1.Service:
				m.services[o.Name] = o
			case *corev1.ConfigMap:
				m.configMaps[o.Name] = o
			case *corev1.Secret:
				m.secrets[o.Name] = o
			}
		}
	}
	return m
}

func stripYAMLComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestK8sManifests checks deploy/k8s against the API types and against
// shoal itself: the ConfigMap's shoal.conf and the container's arguments
// load with shoal's configuration loader, the probes and the preStop hook
// use what the server serves, and the objects refer to each other.
func TestK8sManifests(t *testing.T) {
	m := loadK8sManifests(t)
	sts := m.statefulSet
	require.NotNil(t, sts, "a StatefulSet")
	require.NotNil(t, m.pdb, "a PodDisruptionBudget")
	labels := sts.Spec.Template.Labels
	require.NotEmpty(t, labels)
	for k, v := range sts.Spec.Selector.MatchLabels {
		require.Equal(t, v, labels[k], "StatefulSet selector %s", k)
	}
	for k, v := range m.pdb.Spec.Selector.MatchLabels {
		require.Equal(t, v, labels[k], "PDB selector %s", k)
	}
	require.NotNil(t, m.pdb.Spec.MaxUnavailable)
	require.Equal(t, intstr.FromInt32(1), *m.pdb.Spec.MaxUnavailable)

	// The headless Service behind the pods' names publishes them before
	// they are ready (a node is ready only once the cluster formed).
	headless := m.services[sts.Spec.ServiceName]
	require.NotNil(t, headless, "Service %s (the StatefulSet's serviceName)", sts.Spec.ServiceName)
	require.Equal(t, corev1.ClusterIPNone, headless.Spec.ClusterIP)
	require.True(t, headless.Spec.PublishNotReadyAddresses)
	for k, v := range headless.Spec.Selector {
		require.Equal(t, v, labels[k], "headless Service selector %s", k)
	}
	require.Equal(t, appsv1.ParallelPodManagement, sts.Spec.PodManagementPolicy)

	pod := sts.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, sp := range headless.Spec.Ports {
		require.Contains(t, ports, sp.TargetPort.StrVal, "Service port %s", sp.Name)
	}

	// The configuration: the ConfigMap's file at the path of the first
	// argument, loaded with the remaining arguments ($(VAR)s filled in).
	var confMount, dataMount string
	for _, vm := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil {
				confMount = vm.MountPath
				cm := m.configMaps[v.ConfigMap.Name]
				require.NotNil(t, cm, "ConfigMap %s", v.ConfigMap.Name)
				dir := t.TempDir()
				for name, text := range cm.Data {
					require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
				}
				confMount = dir + "|" + vm.MountPath
			}
		}
		for _, pvc := range sts.Spec.VolumeClaimTemplates {
			if pvc.Name == vm.Name {
				dataMount = vm.MountPath
			}
		}
	}
	require.NotEmpty(t, confMount, "a ConfigMap volume")
	require.Equal(t, "/data", dataMount, "the data volume claim is mounted on /data")
	localDir, mountPath, _ := strings.Cut(confMount, "|")
	require.NotEmpty(t, c.Args)
	require.True(t, strings.HasPrefix(c.Args[0], mountPath+"/"), "first argument %s is the mounted config file", c.Args[0])
	// SHOAL_MAXMEMORY_MB as the downward API computes it for a 1Gi limit.
	var maxmemMB string
	for _, e := range c.Env {
		if rf := e.ValueFrom.ResourceFieldRef; rf != nil && e.Name == "SHOAL_MAXMEMORY_MB" {
			require.Equal(t, "limits.memory", rf.Resource)
			limit := c.Resources.Limits[corev1.ResourceMemory]
			mb := (limit.Value() + rf.Divisor.Value() - 1) / rf.Divisor.Value() // rounded up, as the kubelet does
			require.InDelta(t, 0.75, float64(mb<<20)/float64(limit.Value()), 0.01, "maxmemory is 3/4 of the limit")
			maxmemMB = strconv.FormatInt(mb, 10)
		}
	}
	require.NotEmpty(t, maxmemMB, "maxmemory from the memory limit")
	env := map[string]string{"POD_NAME": "shoal-4", "POD_NAMESPACE": "prod", "POD_IP": "10.1.2.3",
		"SHOAL_PASSWORD": "a-password", "SHOAL_MAXMEMORY_MB": maxmemMB}
	for _, e := range c.Env {
		require.NotNil(t, e.ValueFrom, e.Name)
		require.Contains(t, env, e.Name)
		if ref := e.ValueFrom.SecretKeyRef; ref != nil {
			sec := m.secrets[ref.Name]
			require.NotNil(t, sec, "Secret %s of %s", ref.Name, e.Name)
			require.NotEmpty(t, sec.StringData[ref.Key]+string(sec.Data[ref.Key]), "%s/%s", ref.Name, ref.Key)
		}
	}
	args := []string{filepath.Join(localDir, strings.TrimPrefix(c.Args[0], mountPath+"/"))}
	require.Equal(t, dataMount, directive(c.Args, "dir"), "--dir is the data volume")
	for _, a := range c.Args[1:] {
		if a == dataMount {
			a = t.TempDir() // /data does not exist here
		}
		for k, v := range env {
			a = strings.ReplaceAll(a, "$("+k+")", v)
		}
		require.NotContains(t, a, "$(", "unexpanded variable")
		args = append(args, a)
	}
	cfg, err := config.Load(args)
	require.NoError(t, err, "shoal-server %v", args)
	require.True(t, cfg.Bool("cluster-enabled"))
	require.Equal(t, "shoal-4.shoal-headless.prod.svc.cluster.local", cfg.String("cluster-announce-hostname"))
	require.Equal(t, "10.1.2.3", cfg.String("cluster-announce-ip"))
	require.Equal(t, "hostname", cfg.String("cluster-preferred-endpoint-type"))
	require.EqualValues(t, ports["client"], cfg.Int("port"))
	require.EqualValues(t, ports["bus"], cfg.Int("cluster-port"))
	require.EqualValues(t, ports["metrics"], cfg.Int("metrics-port"))
	// The password (a Secret) protects clients and replication, and the
	// preStop hook, a process of the container, has it in SHOAL_PASSWORD.
	require.Equal(t, "a-password", cfg.String("requirepass"))
	require.Equal(t, "a-password", cfg.String("masterauth"))
	require.EqualValues(t, 768<<20, cfg.Maxmemory(), "maxmemory for a 1Gi limit")

	// The image is named once, and set by kustomize.
	require.Len(t, m.images, 1)
	require.Equal(t, c.Image, m.images[0].Name, "kustomization.yaml's images override the container's image")
	require.NotEmpty(t, m.images[0].NewTag)

	// No two shoal pods on one machine (a master and its replica never
	// share one), spread over zones.
	require.NotNil(t, pod.Affinity)
	require.NotNil(t, pod.Affinity.PodAntiAffinity)
	req := pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	require.Len(t, req, 1)
	require.Equal(t, "kubernetes.io/hostname", req[0].TopologyKey)
	require.Equal(t, labels, req[0].LabelSelector.MatchLabels)
	require.Len(t, pod.TopologySpreadConstraints, 1)
	require.Equal(t, "topology.kubernetes.io/zone", pod.TopologySpreadConstraints[0].TopologyKey)

	// The NetworkPolicy admits the bus only from shoal pods, and names
	// ports the container has.
	np := m.netpol
	require.NotNil(t, np, "a NetworkPolicy")
	require.Equal(t, labels, np.Spec.PodSelector.MatchLabels)
	busFromShoalOnly := true
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			require.Contains(t, ports, p.Port.StrVal, "NetworkPolicy port")
			if p.Port.StrVal == "bus" {
				for _, from := range rule.From {
					busFromShoalOnly = busFromShoalOnly && from.PodSelector != nil && from.NamespaceSelector == nil &&
						from.PodSelector.MatchLabels["app.kubernetes.io/name"] == labels["app.kubernetes.io/name"]
				}
			}
		}
	}
	require.True(t, busFromShoalOnly, "the bus port only from shoal pods")

	// Seeds: every pod of the StatefulSet by its stable name, and the
	// bootstrap plan uses exactly the pods there are.
	seeds, err := config.ParseClusterSeeds(cfg.String("cluster-seeds"))
	require.NoError(t, err)
	require.NotNil(t, sts.Spec.Replicas)
	replicas := int(*sts.Spec.Replicas)
	require.Len(t, seeds, replicas)
	for i, s := range seeds {
		require.Equal(t, sts.Name+"-"+strconv.Itoa(i)+"."+headless.Name, s.Host)
		require.EqualValues(t, cfg.Int("port"), s.Port)
	}
	require.EqualValues(t, replicas, cfg.Int("cluster-bootstrap-masters")*(1+cfg.Int("cluster-bootstrap-replicas")))

	// Probes and the preStop hook use what shoal-server serves.
	rp, lp := c.ReadinessProbe, c.LivenessProbe
	require.NotNil(t, rp)
	require.NotNil(t, rp.HTTPGet)
	require.Equal(t, "/ready", rp.HTTPGet.Path)
	require.Equal(t, "metrics", rp.HTTPGet.Port.StrVal)
	require.NotNil(t, lp)
	require.NotNil(t, lp.HTTPGet)
	require.Equal(t, "/live", lp.HTTPGet.Path)
	require.Equal(t, "metrics", lp.HTTPGet.Port.StrVal)
	require.NotNil(t, c.Lifecycle)
	require.NotNil(t, c.Lifecycle.PreStop)
	require.NotNil(t, c.Lifecycle.PreStop.Exec)
	cmd := c.Lifecycle.PreStop.Exec.Command
	require.GreaterOrEqual(t, len(cmd), 4)
	require.Equal(t, []string{"/shoal-server", "--prestop", strconv.Itoa(int(ports["client"]))}, cmd[:3])
	wait, err := strconv.Atoi(cmd[3])
	require.NoError(t, err)
	require.NotNil(t, pod.TerminationGracePeriodSeconds)
	require.Less(t, int64(wait)+cfg.Int("cluster-failover-on-shutdown"), *pod.TerminationGracePeriodSeconds,
		"the preStop wait and the shutdown handover fit the grace period")

	// The image's numeric user (deploy/Dockerfile) runs the pod.
	require.NotNil(t, pod.SecurityContext)
	require.NotNil(t, pod.SecurityContext.RunAsNonRoot)
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
	root, err := ModuleRoot()
	require.NoError(t, err)
	dockerfile, err := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile"))
	require.NoError(t, err)
	user := regexp.MustCompile(`(?m)^USER (\d+):(\d+)$`).FindStringSubmatch(string(dockerfile))
	require.NotNil(t, user, "USER uid:gid in the Dockerfile")
	require.NotNil(t, pod.SecurityContext.RunAsUser)
	require.Equal(t, user[1], strconv.FormatInt(*pod.SecurityContext.RunAsUser, 10))
	require.Contains(t, string(dockerfile), "\nFROM scratch\n")
}

// TestComposeFilesLoad checks both compose files against shoal itself:
// every service's command line loads with shoal's configuration loader,
// the seeds name exactly the services, and the bootstrap plan uses exactly
// the services there are.
func TestComposeFilesLoad(t *testing.T) {
	root, err := ModuleRoot()
	require.NoError(t, err)
	for _, file := range []string{"docker-compose.yml", "docker-compose.host.yml"} {
		data, err := os.ReadFile(filepath.Join(root, "deploy", file))
		require.NoError(t, err)
		var cf composeFile
		require.NoError(t, yaml.Unmarshal(data, &cf), file)
		nodes := cf.nodes()
		require.Len(t, nodes, 6, file)
		wantSeeds := map[string]bool{}
		for name, svc := range nodes {
			require.Equal(t, "${SHOAL_IMAGE:-shoal-server:latest}", svc.Image, "%s %s", file, name)
			host := name
			if svc.NetworkMode == "host" {
				host = "127.0.0.1"
			}
			port := directive(svc.Command, "port")
			if port == "" {
				port = "6379"
			}
			wantSeeds[host+":"+port] = true
		}
		// The ready probe and every node's healthcheck wait for exactly the
		// nodes there are (shoal-server --wait-cluster).
		probe, ok := cf.Services["ready"]
		require.True(t, ok, "%s: a ready service", file)
		require.True(t, probe.isProbe(), "%s ready: %v", file, probe.Command)
		require.Equal(t, []string{"ready"}, probe.Profiles, "%s: not started by up", file)
		probeAddrs := func(addrs string) map[string]bool {
			got := map[string]bool{}
			for _, a := range strings.Split(addrs, ",") {
				got[a] = true
			}
			return got
		}
		require.Equal(t, wantSeeds, probeAddrs(probe.Command[1]), "%s ready", file)
		for name, svc := range nodes {
			hc := svc.Healthcheck.Test
			require.Len(t, hc, 5, "%s %s healthcheck", file, name)
			require.Equal(t, []string{"CMD", "/shoal-server", "--wait-cluster"}, hc[:3], "%s %s", file, name)
			require.Equal(t, wantSeeds, probeAddrs(hc[3]), "%s %s healthcheck", file, name)
		}
		for name, svc := range nodes {
			args := slices.Clone(svc.Command)
			for i := range args {
				if i > 0 && args[i-1] == "--dir" {
					args[i] = t.TempDir() // /data is the container's volume
				}
			}
			cfg, err := config.Load(args)
			require.NoError(t, err, "%s %s: %v", file, name, args)
			require.True(t, cfg.Bool("cluster-enabled"), "%s %s", file, name)
			require.NotZero(t, cfg.Int("metrics-port"), "%s %s", file, name)
			seeds, err := config.ParseClusterSeeds(cfg.String("cluster-seeds"))
			require.NoError(t, err)
			got := map[string]bool{}
			for _, s := range seeds {
				got[s.Host+":"+strconv.Itoa(s.Port)] = true
			}
			require.Equal(t, wantSeeds, got, "%s %s seeds", file, name)
			require.EqualValues(t, len(nodes), cfg.Int("cluster-bootstrap-masters")*(1+cfg.Int("cluster-bootstrap-replicas")), "%s %s", file, name)
			if svc.NetworkMode != "host" {
				require.Equal(t, name, cfg.String("cluster-announce-hostname"), "%s %s", file, name)
				require.Equal(t, "hostname", cfg.String("cluster-preferred-endpoint-type"), "%s %s", file, name)
			}
		}
	}
}

package node

// startDeployServices starts what the deployment directives ask for (issue
// 9): the HTTP endpoint of metrics-port (/metrics, /ready, /live;
// node/metrics.go) and the self-forming cluster (cluster-seeds,
// cluster-bootstrap-masters; gossip/bootstrap.go, its glue in
// node/cluster_bootstrap.go). Both stop with the cron (stopCron) and are
// waited for by Shutdown (wg).
func (s *Server) startDeployServices() error {
	if err := s.startMetrics(); err != nil {
		return err
	}
	return s.startClusterFormer()
}

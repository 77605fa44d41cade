package node

import (
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/gossip"
)

// The self-forming cluster (issue 9) is gossip.Former (gossip/bootstrap.go);
// this is its glue: the directives, the server's stop and wait group, and
// the keyspace's emptiness CLUSTER REPLICATE checks.

// startClusterFormer starts the former when the directives ask for it.
func (s *Server) startClusterFormer() error {
	if s.cluster == nil {
		return nil
	}
	seeds, err := config.ParseClusterSeeds(s.cfg.String("cluster-seeds"))
	if err != nil {
		return err
	}
	masters := int(s.cfg.Int("cluster-bootstrap-masters"))
	if len(seeds) == 0 && masters == 0 {
		return nil
	}
	f := gossip.NewFormer(s.cluster, s.log.Named("former"), seeds, masters,
		int(s.cfg.Int("cluster-bootstrap-replicas")), s.dbEmpty)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f.Run(s.stopCron)
	}()
	return nil
}

package natscluster

import (
	"testing"

	"github.com/mew-protocol/mew/gateway/cluster/clustertest"
)

func TestConformanceSingleServer(t *testing.T) { clustertest.Run(t, singleServer) }

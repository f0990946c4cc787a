package cli

import "github.com/mew-protocol/mew/internal/bench"

// gatewayBenchTarget returns the gateway as a bench.Target for `mew bench`:
// in-process, audit log on.
func gatewayBenchTarget() bench.Target { return gatewayBench{} }

package bench

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// childEnv, when set in the environment, makes the test binary a relay child of ChildTarget
// (see childCommand) instead of running the tests.
const childEnv = "MEW_BENCH_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := ServeChild(context.Background(), RelayTarget{}, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

package supervisor

import (
	"os"
	"testing"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// TestMain lets the test binary play a process of chronos run's: tests
// start it again with CHRONOS_TEST_ROLE set (coretest.RoleCmd), or as a
// signal logger, so that what is signalled is a real OS process.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "signal-logger" {
		os.Exit(signalLogger(os.Args[2]))
	}
	if role := os.Getenv("CHRONOS_TEST_ROLE"); role != "" {
		c := core.NewClient(core.Options{Ledger: coretest.OpenSpec(os.Getenv("CHRONOS_TEST_DB")), Devices: servicetest.Devices, Host: os.Getenv("CHRONOS_TEST_HOST")})
		switch role {
		case "runwait":
			os.Exit(playRunWaiter(c))
		case "uncaught":
			os.Exit(playUncaught(c, os.Getenv("CHRONOS_TEST_ARG")))
		}
		os.Exit(coretest.RoleFailed)
	}
	code := m.Run()
	etcdtest.StopShared()
	os.Exit(code)
}

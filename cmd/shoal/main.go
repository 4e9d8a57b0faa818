// Command shoal is the single Shoal binary: daemons, cluster tools and
// offline map tools. Subcommands only parse flags and call packages.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func main() {
	err := newRoot().Execute()
	pprof.StopCPUProfile() // no-op unless --cpuprofile started one
	trace.Stop()           // no-op unless --trace started one
	if err != nil {
		fmt.Fprintln(os.Stderr, "shoal:", err)
		os.Exit(1)
	}
}

// cpuProfile and traceFile are --cpuprofile and --trace: where to write
// a Go CPU profile and a Go execution trace of this run ("": none).
var cpuProfile, traceFile string

// startProfiles starts the --cpuprofile profile and the --trace execution
// trace. %p in either path becomes the process id, so daemons that
// inherit SHOAL_CPUPROFILE or SHOAL_TRACE from `shoal up` write one file
// each. Both are complete when the command returns (daemons: on
// SIGTERM/SIGINT, as `shoal down` stops them). `go tool trace
// -pprof=sync|syscall|net|sched FILE` turns a trace into off-CPU
// profiles: where goroutines waited, and for how long.
func startProfiles() error {
	for _, p := range []struct {
		flag, path string
		start      func(io.Writer) error
	}{{"--cpuprofile", cpuProfile, pprof.StartCPUProfile}, {"--trace", traceFile, trace.Start}} {
		if p.path == "" {
			continue
		}
		f, err := os.Create(strings.ReplaceAll(p.path, "%p", strconv.Itoa(os.Getpid())))
		if err == nil {
			err = p.start(f)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p.flag, err)
		}
	}
	return nil
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "shoal",
		Short:         "Shoal: scale-out software-defined storage (RADOS-style object store, CRUSH placement)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVarP(&confPath, "conf", "c", "", "cluster configuration (default $SHOAL_CONF, else ./shoal-data/shoal.conf)")
	root.PersistentFlags().StringVarP(&clientName, "name", "n", "client.admin", "entity to connect as")
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", os.Getenv("SHOAL_CPUPROFILE"), "write a Go CPU profile of this command to `FILE` (%p: the pid; default $SHOAL_CPUPROFILE)")
	root.PersistentFlags().StringVar(&traceFile, "trace", os.Getenv("SHOAL_TRACE"), "write a Go execution trace of this command to `FILE` (%p: the pid; default $SHOAL_TRACE): where it waited, for off-CPU profiles")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return startProfiles() }
	root.PersistentFlags().StringVarP(&keyringPath, "keyring", "k", "", "keyring file with the entity's key (default the configuration's keyring)")
	root.AddCommand(crushCmd(), osdmapCmd(), upCmd(), downCmd(), monCmd(), mgrCmd(), osdCmd(), poolCmd(), configCmd(), authCmd(), radosCmd(), rbdCmd(), benchCmd(), sizingCmd(),
		gatewayCmd(), userCmd(), bucketCmd(), gcCmd(), lcCmd(), pgCmd(), quotaCmd(), usageCmd(), sseCmd(), balancerCmd(), deployCmd())
	root.AddCommand(statusCmds()...)
	return root
}

// Command shoal is the single Shoal binary: daemons, cluster tools and
// offline map tools. Subcommands only parse flags and call packages.
package main

import (
	"fmt"
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

// cpuProfile is --cpuprofile: where to write a CPU profile of this run.
var cpuProfile string

// startCPUProfile starts the --cpuprofile profile; %p in the path becomes
// the process id, so daemons that inherit SHOAL_CPUPROFILE from `shoal up`
// write one file each. The profile is written when the command returns
// (daemons: on SIGTERM/SIGINT, as `shoal down` stops them).
func startCPUProfile() error {
	if cpuProfile == "" {
		return nil
	}
	f, err := os.Create(strings.ReplaceAll(cpuProfile, "%p", strconv.Itoa(os.Getpid())))
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	return pprof.StartCPUProfile(f)
}

// traceFile is --trace: where to write a Go execution trace of this run.
var traceFile string

// startTrace starts the --trace execution trace, named as --cpuprofile's
// profile (%p: the pid) and written as it runs. `go tool trace
// -pprof=sync|syscall|net|sched FILE` turns it into off-CPU profiles:
// where goroutines waited, and for how long.
func startTrace() error {
	if traceFile == "" {
		return nil
	}
	f, err := os.Create(strings.ReplaceAll(traceFile, "%p", strconv.Itoa(os.Getpid())))
	if err != nil {
		return fmt.Errorf("--trace: %w", err)
	}
	return trace.Start(f)
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
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if err := startCPUProfile(); err != nil {
			return err
		}
		return startTrace()
	}
	root.PersistentFlags().StringVarP(&keyringPath, "keyring", "k", "", "keyring file with the entity's key (default the configuration's keyring)")
	root.AddCommand(crushCmd(), osdmapCmd(), upCmd(), downCmd(), monCmd(), osdCmd(), poolCmd(), configCmd(), authCmd(), radosCmd(), benchCmd(),
		gatewayCmd(), userCmd(), bucketCmd(), gcCmd(), lcCmd(), pgCmd())
	root.AddCommand(statusCmds()...)
	return root
}

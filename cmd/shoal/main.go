// Command shoal is the single Shoal binary: daemons, cluster tools and
// offline map tools. Subcommands only parse flags and call packages.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "shoal:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "shoal",
		Short:         "Shoal: scale-out software-defined storage (RADOS-style object store, CRUSH placement)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(crushCmd(), osdmapCmd(), upCmd())
	return root
}

func upCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster (not yet implemented: arrives with the RADOS core)",
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("up: not implemented yet; the MON, OSD daemons and `shoal up` arrive with the RADOS core (issue 3)")
		},
	}
}

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
	root.PersistentFlags().StringVarP(&confPath, "conf", "c", "", "cluster configuration (default $SHOAL_CONF, else ./shoal-data/shoal.conf)")
	root.PersistentFlags().StringVarP(&clientName, "name", "n", "client.admin", "entity to connect as")
	root.PersistentFlags().StringVarP(&keyringPath, "keyring", "k", "", "keyring file with the entity's key (default the configuration's keyring)")
	root.AddCommand(crushCmd(), osdmapCmd(), upCmd(), downCmd(), monCmd(), osdCmd(), poolCmd(), configCmd(), authCmd(), radosCmd(), benchCmd(),
		gatewayCmd(), userCmd(), bucketCmd(), gcCmd())
	root.AddCommand(statusCmds()...)
	return root
}

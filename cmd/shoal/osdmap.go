package main

import "github.com/spf13/cobra"

func osdmapCmd() *cobra.Command {
	return &cobra.Command{Use: "osdmap", Short: "Create and query offline OSD maps (like osdmaptool)"}
}

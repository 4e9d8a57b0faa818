package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shoal-project/shoal/cluster"
)

// deployCmd is `shoal deploy`: files that run a cluster on several hosts.
func deployCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "deploy", Short: "Write what runs a cluster across hosts (Docker Compose); see docs/deploy.md"}
	var o cluster.ComposeOptions
	var set []string
	compose := &cobra.Command{Use: "compose DIR", Short: "Write a Docker Compose cluster into DIR: MON, OSD host and gateway containers on one network, their configurations and keyring",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error {
			o.Dir = a[0]
			o.ExtraConf = strings.Join(set, "\n")
			addrs, err := cluster.Compose(o)
			if err != nil {
				return err
			}
			out := c.OutOrStdout()
			fmt.Fprintf(out, "wrote %s/docker-compose.yml\nMONs:     %s\nOSD hosts: %s\n", a[0], strings.Join(addrs.Mons, " "), strings.Join(addrs.OSDs, " "))
			if len(addrs.Gateways) > 0 {
				fmt.Fprintf(out, "S3:       %s\n", strings.Join(addrs.Gateways, " "))
			}
			fmt.Fprintf(out, "start:    docker-compose -f %s/docker-compose.yml up -d\nthen:     shoal -c %s/shoal.conf status\n", a[0], a[0])
			return nil
		}}
	f := compose.Flags()
	f.IntVar(&o.Mons, "mons", 3, "MON containers (1, 3 or 5)")
	f.IntVar(&o.OSDHosts, "osd-hosts", 5, "OSD host containers (one OSD each; CRUSH's failure domain is the host)")
	f.IntVar(&o.Gateways, "gateways", 2, "S3 gateway containers")
	f.StringVar(&o.Subnet, "subnet", "172.28.0.0/24", "the compose network's IPv4 /24")
	f.StringVar(&o.Image, "image", "shoal:latest", "the image the containers run (deploy/Dockerfile)")
	f.IntVar(&o.PoolSize, "pool-size", 0, "osd_pool_default_size (default: 3, or the OSD hosts if fewer)")
	f.StringArrayVar(&set, "set", nil, "an option for every daemon's [global], as NAME=VALUE (repeatable)")
	cmd.AddCommand(compose)
	return cmd
}

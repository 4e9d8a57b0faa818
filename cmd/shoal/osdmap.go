package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/spf13/cobra"
)

func osdmapCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "osdmap", Short: "Create and query offline OSD maps (like osdmaptool)"}
	cmd.AddCommand(osdmapCreateCmd(), osdmapMapObjectCmd(), osdmapMapPGsCmd(), osdmapPrintCmd())
	return cmd
}

func osdmapCreateCmd() *cobra.Command {
	var (
		numOSD, pgBits, pgpBits, pgNum, size, minSize int
		racks, hostsPerRack, osdsPerHost              int
		crushFile, poolName, poolType, class          string
		clobber, noHashPSPool                         bool
	)
	c := &cobra.Command{
		Use:   "create FILE",
		Short: "Write a new OSD map: OSDs up and in, one pool (osdmaptool --createsimple)",
		Long: `Write a new OSD map to FILE with every OSD existing, up and in, and one pool
(id 1). The CRUSH map comes from --crush (crushtool text format) or is built
as a regular hierarchy: --racks × --hosts-per-rack hosts × --osds-per-host OSDs.
pg_num is --pg-num, or num_osd << --pg-bits as osdmaptool computes it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			var cm *crush.Map
			var err error
			if crushFile != "" {
				if cm, err = loadCrush(crushFile); err != nil {
					return err
				}
			} else if cm, err = crush.Simple(crush.SimpleSpec{Racks: racks, HostsPerRack: hostsPerRack, OSDsPerHost: osdsPerHost, Class: class}); err != nil {
				return err
			}
			n := int(cm.MaxDevices())
			if numOSD > 0 {
				n = numOSD
			}
			pgs := n << pgBits
			pgps := n << pgpBits
			if pgNum > 0 {
				pgs, pgps = pgNum, pgNum
			}
			pt := osdmap.PoolReplicated
			rule := 0
			switch poolType {
			case "replicated":
			case "erasure":
				pt, rule = osdmap.PoolErasure, 1
			default:
				return fmt.Errorf("--pool-type %q: want replicated or erasure", poolType)
			}
			if minSize == 0 {
				minSize = size - size/2 // Ceph's default when osd_pool_default_min_size is 0
			}
			flags := osdmap.FlagHashPSPool
			if noHashPSPool {
				flags = 0
			}
			pool := &osdmap.Pool{ID: 1, Name: poolName, Type: pt, Size: size, MinSize: minSize, PGNum: uint32(pgs),
				PGPNum: uint32(min(pgps, pgs)), CrushRule: rule, Flags: flags, ObjectHash: osdmap.HashRjenkins}
			inc := &osdmap.Incremental{Epoch: 1, NewMaxOSD: int32(n), NewPools: []*osdmap.Pool{pool}, NewOSDs: map[int32]osdmap.OSD{}}
			for i := 0; i < n; i++ {
				inc.NewOSDs[int32(i)] = osdmap.OSD{Exists: true, Up: true, Weight: osdmap.WeightIn, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}
			}
			m, err := osdmap.New("", cm).Apply(inc)
			if err != nil {
				return err
			}
			flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if clobber {
				flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(args[0], flag, 0o644)
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s exists; pass --clobber to overwrite it", args[0])
			} else if err != nil {
				return err
			}
			if _, err := f.Write(m.Encode()); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Printf("wrote epoch %d to %s: %d osds, pool %d '%s' %s size %d pg_num %d pgp_num %d\n",
				m.Epoch, args[0], n, pool.ID, pool.Name, pool.Type, pool.Size, pool.PGNum, pool.PGPNum)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&crushFile, "crush", "", "CRUSH map (text) to use instead of a generated hierarchy")
	f.IntVar(&racks, "racks", 0, "racks in the generated hierarchy (0: hosts under the root)")
	f.IntVar(&hostsPerRack, "hosts-per-rack", 3, "hosts per rack (or in total without racks)")
	f.IntVar(&osdsPerHost, "osds-per-host", 1, "OSDs per host")
	f.StringVar(&class, "device-class", "", "device class of the generated OSDs (hdd, ssd, nvme)")
	f.IntVar(&numOSD, "num-osd", 0, "max_osd (default: the CRUSH map's device count)")
	f.IntVar(&pgBits, "pg-bits", 6, "pg_num = num_osd << pg-bits")
	f.IntVar(&pgpBits, "pgp-bits", 6, "pgp_num = num_osd << pgp-bits")
	f.IntVar(&pgNum, "pg-num", 0, "pg_num and pgp_num (overrides the bits)")
	f.IntVar(&size, "size", 3, "pool size (replicas, or k+m)")
	f.IntVar(&minSize, "min-size", 0, "pool min_size (default size - size/2)")
	f.StringVar(&poolName, "pool-name", "rbd", "pool name")
	f.StringVar(&poolType, "pool-type", "replicated", "replicated (CRUSH rule 0) or erasure (rule 1)")
	f.BoolVar(&noHashPSPool, "no-hashpspool", false, "create the pool without the hashpspool flag")
	f.BoolVar(&clobber, "clobber", false, "overwrite FILE if it exists")
	return c
}

// mapOptions are the in-memory state changes osdmaptool offers
// (--mark-out and friends): applied as one incremental, never saved.
type mapOptions struct {
	markOut, markDown []int
	pool              int64
}

func (o *mapOptions) register(c *cobra.Command) {
	c.Flags().IntSliceVar(&o.markOut, "mark-out", nil, "mark these OSDs out first (not saved)")
	c.Flags().IntSliceVar(&o.markDown, "mark-down", nil, "mark these OSDs down first (not saved)")
	c.Flags().Int64Var(&o.pool, "pool", 1, "pool id")
}

func (o *mapOptions) load(path string) (*osdmap.Map, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := osdmap.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(o.markOut)+len(o.markDown) == 0 {
		return m, nil
	}
	inc := &osdmap.Incremental{Epoch: m.Epoch + 1, NewOSDs: map[int32]osdmap.OSD{}}
	for _, id := range append(append([]int(nil), o.markOut...), o.markDown...) {
		if id < 0 || id >= int(m.MaxOSD()) || !m.OSDs[id].Exists {
			return nil, fmt.Errorf("osd.%d does not exist in %s", id, path)
		}
		inc.NewOSDs[int32(id)] = m.OSDs[id]
	}
	for _, id := range o.markOut {
		osd := inc.NewOSDs[int32(id)]
		osd.Weight = osdmap.WeightOut
		inc.NewOSDs[int32(id)] = osd
	}
	for _, id := range o.markDown {
		osd := inc.NewOSDs[int32(id)]
		osd.Up = false
		inc.NewOSDs[int32(id)] = osd
	}
	return m.Apply(inc)
}

func osdmapMapObjectCmd() *cobra.Command {
	var o mapOptions
	var namespace string
	c := &cobra.Command{
		Use:   "map-object FILE OBJECT...",
		Short: "Print the PG and acting set of objects (osdmaptool --test-map-object)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			m, err := o.load(args[0])
			if err != nil {
				return err
			}
			for _, name := range args[1:] {
				if err := osdmap.MapObject(os.Stdout, m, o.pool, name, namespace); err != nil {
					return err
				}
			}
			return nil
		},
	}
	o.register(c)
	c.Flags().StringVar(&namespace, "namespace", "", "object namespace")
	return c
}

func osdmapMapPGsCmd() *cobra.Command {
	var o mapOptions
	var dump, dumpAll bool
	c := &cobra.Command{
		Use:   "map-pgs FILE",
		Short: "Map every PG of a pool and summarise the distribution (osdmaptool --test-map-pgs)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			m, err := o.load(args[0])
			if err != nil {
				return err
			}
			if dump || dumpAll {
				if err := osdmap.DumpPGs(os.Stdout, m, o.pool, dumpAll); err != nil {
					return err
				}
			}
			d, err := m.PGDistribution(o.pool)
			if err != nil {
				return err
			}
			printDistribution(m, d)
			return nil
		},
	}
	o.register(c)
	c.Flags().BoolVar(&dump, "dump", false, "print every PG: pgid, acting set, primary")
	c.Flags().BoolVar(&dumpAll, "dump-all", false, "print every PG's raw, up and acting sets")
	return c
}

func printDistribution(m *osdmap.Map, d osdmap.Distribution) {
	fmt.Printf("#osd\tcount\texpected\tprimary\treweight\n")
	ids := make([]int32, 0, len(d.Expected))
	for o := range d.Expected {
		ids = append(ids, o)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, o := range ids {
		fmt.Printf("osd.%d\t%d\t%.1f\t%d\t%s\n", o, d.Count[o], d.Expected[o], d.Primary[o],
			strconv.FormatFloat(float64(m.OSDs[o].Weight)/osdmap.WeightIn, 'g', 4, 64))
	}
	fmt.Printf(" pgs %d, osds in %d, mean %.2f per osd, stddev %.2f (%.3fx of mean)\n", d.PGs, len(ids), d.Mean, d.StdDev, d.StdDev/max(d.Mean, 1e-9))
	if d.MaxOSD >= 0 {
		fmt.Printf(" max osd.%d %d = %.3fx its expected share\n", d.MaxOSD, d.Count[d.MaxOSD], d.MaxRatio)
	}
	if d.Short > 0 {
		fmt.Printf(" %d PGs have fewer OSDs than the pool size\n", d.Short)
	}
}

func osdmapPrintCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "print FILE",
		Short: "Print an OSD map's epoch, pools and OSDs",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			m, err := (&mapOptions{}).load(args[0])
			if err != nil {
				return err
			}
			fmt.Printf("epoch %d\nmax_osd %d\n", m.Epoch, m.MaxOSD())
			for _, id := range m.PoolIDs() {
				p := m.Pools[id]
				fmt.Printf("pool %d '%s' %s size %d min_size %d crush_rule %d pg_num %d pgp_num %d flags %s\n",
					p.ID, p.Name, p.Type, p.Size, p.MinSize, p.CrushRule, p.PGNum, p.PGPNum, poolFlags(p.Flags))
			}
			for i, o := range m.OSDs {
				if !o.Exists {
					continue
				}
				state := map[bool]string{true: "up", false: "down"}[o.Up]
				in := map[bool]string{true: "in", false: "out"}[o.In()]
				fmt.Printf("osd.%d %s %s weight %g primary_affinity %g up_from %d\n", i, state, in,
					float64(o.Weight)/osdmap.WeightIn, float64(o.PrimaryAffinity)/0x10000, o.UpFrom)
			}
			return nil
		},
	}
}

func poolFlags(f uint64) string {
	var names []string
	if f&osdmap.FlagHashPSPool != 0 {
		names = append(names, "hashpspool")
	}
	if f&osdmap.FlagECOverwrites != 0 {
		names = append(names, "ec_overwrites")
	}
	return strings.Join(names, ",")
}

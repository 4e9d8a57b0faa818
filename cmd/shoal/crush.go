package main

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/shoal-project/shoal/crush"
	"github.com/spf13/cobra"
)

func readInput(path string) ([]byte, error) {
	if path == "" || path == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}

func writeOutput(path string, data []byte) error {
	if path == "" || path == "-" {
		_, err := os.Stdout.Write(data)
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// loadCrush reads a CRUSH map in the text format, the form the CLI
// exchanges; OSD map files carry CRUSH maps in their exact binary encoding.
func loadCrush(path string) (*crush.Map, error) {
	src, err := readInput(path)
	if err != nil {
		return nil, err
	}
	m, err := crush.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func crushCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "crush", Short: "Compile, decompile and test CRUSH maps (like crushtool)"}

	var in, out string
	compile := &cobra.Command{
		Use:   "compile -i MAP.txt [-o OUT]",
		Short: "Check a text CRUSH map and write it in canonical form (crushtool -c)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			m, err := loadCrush(in)
			if err != nil {
				return err
			}
			return writeOutput(out, m.Decompile())
		},
	}
	decompile := &cobra.Command{
		Use:   "decompile -i MAP [-o OUT.txt]",
		Short: "Write a text CRUSH map in crushtool -d's exact layout (the same as compile: the CLI keeps maps as text)",
		Args:  cobra.NoArgs,
		RunE:  compile.RunE,
	}
	for _, c := range []*cobra.Command{compile, decompile} {
		c.Flags().StringVarP(&in, "infn", "i", "-", "input map (- for stdin)")
		c.Flags().StringVarP(&out, "outfn", "o", "-", "output file (- for stdout)")
	}

	o := crush.DefaultTestOptions()
	var rule, numRep, x int
	var weights []string
	test := &cobra.Command{
		Use:   "test -i MAP [flags]",
		Short: "Map a range of inputs through the rules (crushtool --test)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			m, err := loadCrush(in)
			if err != nil {
				return err
			}
			if rule >= 0 {
				o.MinRule, o.MaxRule = rule, rule
			}
			if numRep >= 0 {
				o.MinRep, o.MaxRep = numRep, numRep
			}
			if x >= 0 {
				o.MinX, o.MaxX = x, x
			}
			if len(weights)%2 != 0 {
				return fmt.Errorf("--weight takes pairs: DEVICE WEIGHT")
			}
			o.Reweight = map[int32]float64{}
			for i := 0; i < len(weights); i += 2 {
				d, err1 := strconv.ParseInt(weights[i], 10, 32)
				w, err2 := strconv.ParseFloat(weights[i+1], 64)
				if err1 != nil || err2 != nil || w < 0 || w > 1 {
					return fmt.Errorf("--weight %s,%s: want DEVICE,WEIGHT with WEIGHT in [0,1]", weights[i], weights[i+1])
				}
				o.Reweight[int32(d)] = w
			}
			return m.Test(os.Stdout, o)
		},
	}
	f := test.Flags()
	f.StringVarP(&in, "infn", "i", "-", "input map (- for stdin)")
	f.IntVar(&o.MinX, "min-x", -1, "first input")
	f.IntVar(&o.MaxX, "max-x", -1, "last input")
	f.IntVar(&x, "x", -1, "a single input")
	f.IntVar(&o.MinRule, "min-rule", -1, "first rule id")
	f.IntVar(&o.MaxRule, "max-rule", -1, "last rule id")
	f.IntVar(&rule, "rule", -1, "rule id to test (default all)")
	f.IntVar(&numRep, "num-rep", -1, "replica count (default the rule's min_size..max_size)")
	f.IntVar(&o.PoolID, "pool-id", -1, "hash each input with this pool id, as a pool's PGs are")
	f.StringSliceVarP(&weights, "weight", "w", nil, "DEVICE,WEIGHT reweight a device (0..1); repeatable")
	f.BoolVar(&o.ShowMappings, "show-mappings", false, "print every mapping")
	f.BoolVar(&o.ShowBadMappings, "show-bad-mappings", false, "print mappings with fewer devices than asked")
	f.BoolVar(&o.ShowUtilization, "show-utilization", false, "print the count per device")
	f.BoolVar(&o.ShowUtilAll, "show-utilization-all", false, "as --show-utilization, with zero-weight devices")
	f.BoolVar(&o.ShowStatistics, "show-statistics", false, "print result-size statistics")

	var spec crush.SimpleSpec
	build := &cobra.Command{
		Use:   "build [-o OUT.txt]",
		Short: "Write a regular hierarchy (root > racks > hosts > OSDs) as a text map (crushtool --build)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			text, err := crush.SimpleText(spec)
			if err != nil {
				return err
			}
			m, err := crush.Compile([]byte(text))
			if err != nil {
				return err
			}
			return writeOutput(out, m.Decompile())
		},
	}
	bf := build.Flags()
	bf.StringVarP(&out, "outfn", "o", "-", "output file (- for stdout)")
	bf.IntVar(&spec.Racks, "racks", 0, "racks (0: hosts directly under the root)")
	bf.IntVar(&spec.HostsPerRack, "hosts-per-rack", 3, "hosts per rack (or in total without racks)")
	bf.IntVar(&spec.OSDsPerHost, "osds-per-host", 1, "OSDs per host")
	bf.Float64Var(&spec.Weight, "weight", 1, "CRUSH weight of each OSD (conventionally TiB)")
	bf.StringVar(&spec.Class, "device-class", "", "device class of every OSD")
	bf.StringVar(&spec.FailureDomain, "failure-domain", "host", "bucket type the default rules spread replicas across")

	cmd.AddCommand(compile, decompile, test, build)
	return cmd
}

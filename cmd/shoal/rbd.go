package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-project/shoal/bench"
	"github.com/shoal-project/shoal/client"
	clsrbd "github.com/shoal-project/shoal/cls/rbd"
	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/nbd"
	"github.com/shoal-project/shoal/rbd"
)

// rbdCmd is `shoal rbd`, with the verbs of Ceph's rbd tool. Images are
// named [POOL/]IMAGE[@SNAP]; the pool defaults to -p, then "rbd".
func rbdCmd() *cobra.Command {
	var pool string
	cmd := &cobra.Command{
		Use:   "rbd VERB [POOL/]IMAGE[@SNAP] ...",
		Short: "Block images, as Ceph's rbd tool (create, clone, flatten, children, ls, info, du, resize, rm, mv, cp, snap, export, import, export-diff, import-diff, diff, feature, object-map, status, lock, bench, nbd serve)",
	}
	cmd.PersistentFlags().StringVarP(&pool, "pool", "p", "rbd", "the pool of images named without one")
	// named runs fn on the image spec in argument arg, resolved
	named := func(arg int, fn func(ctx context.Context, s *session, p *client.Pool, name, snap string, out io.Writer) error) func(*cobra.Command, []string) error {
		return withSession(func(ctx context.Context, s *session, out io.Writer) error {
			p, name, snap, err := imageSpec(ctx, s.conn, pool, s.args[arg])
			if err != nil {
				return err
			}
			return fn(ctx, s, p, name, snap, out)
		})
	}
	// image runs fn on the image spec a[0], opened (at its snapshot if it
	// names one)
	image := func(fn func(ctx context.Context, img *rbd.Image, a []string, out io.Writer) error) func(*cobra.Command, []string) error {
		return named(0, func(ctx context.Context, s *session, p *client.Pool, name, snap string, out io.Writer) error {
			img, err := rbd.Open(ctx, p, name, snap)
			if err != nil {
				return err
			}
			defer img.Close(context.WithoutCancel(ctx))
			return fn(ctx, img, s.args, out)
		})
	}
	// header runs fn on image a[0] opened for its header alone
	// (rbd.OpenHeader: no watch of its own)
	header := func(fn func(ctx context.Context, img *rbd.Image, a []string, out io.Writer) error) func(*cobra.Command, []string) error {
		return named(0, func(ctx context.Context, s *session, p *client.Pool, name, _ string, out io.Writer) error {
			img, err := rbd.OpenHeader(ctx, p, name)
			if err != nil {
				return err
			}
			return fn(ctx, img, s.args, out)
		})
	}

	var size, objectSize, stripeUnit, dataPool, imageFeatures string
	var stripeCount uint64
	// layoutFlags adds the layout flags of create and clone to c
	layoutFlags := func(c *cobra.Command, dflt string) {
		c.Flags().StringVar(&objectSize, "object-size", "", "object size, a power of two from 4K to 32M (default "+dflt+")")
		c.Flags().StringVar(&stripeUnit, "stripe-unit", "", "stripe unit, dividing the object size (default: the object size)")
		c.Flags().Uint64Var(&stripeCount, "stripe-count", 0, "objects a stripe spans (default 1)")
		c.Flags().StringVar(&dataPool, "data-pool", "", "keep the data objects in this pool (an erasure-coded pool needs allow_ec_overwrites)")
		c.Flags().StringVar(&imageFeatures, "image-feature", "", "the features to enable, comma-separated: layering, exclusive-lock, object-map, fast-diff (default: all four)")
	}
	// layout reads them
	layout := func(ctx context.Context, conn *client.Conn) (rbd.Options, error) {
		o := rbd.Options{StripeCount: stripeCount}
		var err error
		if imageFeatures != "" {
			if o.Features, err = parseFeatures(strings.Split(imageFeatures, ",")); err != nil {
				return o, err
			}
			o.Features |= clsrbd.FeatureLayering // "none of the others" is not 0
		}
		if objectSize != "" {
			n, err := parseBytes("--object-size", objectSize, "")
			if err != nil {
				return o, err
			}
			if n&(n-1) != 0 {
				return o, fmt.Errorf("--object-size %s is not a power of two", objectSize)
			}
			o.Order = uint8(bits.TrailingZeros64(n))
		}
		if stripeUnit != "" {
			if o.StripeUnit, err = parseBytes("--stripe-unit", stripeUnit, ""); err != nil {
				return o, err
			}
		}
		if dataPool != "" {
			if o.DataPool, err = conn.Pool(ctx, dataPool); err != nil {
				return o, err
			}
		}
		return o, nil
	}
	create := &cobra.Command{Use: "create [POOL/]IMAGE --size SIZE", Short: "Create an empty (thin) image", Args: cobra.ExactArgs(1),
		RunE: named(0, func(ctx context.Context, s *session, p *client.Pool, name, snap string, _ io.Writer) error {
			if snap != "" {
				return fmt.Errorf("rbd create: %q names a snapshot", s.args[0])
			}
			o, err := layout(ctx, s.conn)
			if err != nil {
				return fmt.Errorf("rbd create: %w", err)
			}
			if o.Size, err = parseBytes("--size", size, "M"); err != nil {
				return err
			}
			return rbd.Create(ctx, p, name, o)
		})}
	create.Flags().StringVarP(&size, "size", "s", "", "image size (M if no unit: 1024, 10G, 1T)")
	layoutFlags(create, "4M")
	create.MarkFlagRequired("size")

	clone := &cobra.Command{Use: "clone [POOL/]PARENT@SNAP [POOL/]CHILD", Short: "Clone a protected snapshot into a new image that reads it until written (layering)", Args: cobra.ExactArgs(2),
		RunE: image(func(ctx context.Context, parent *rbd.Image, a []string, _ io.Writer) error {
			conn := parent.Pool().Conn()
			p, name, snap, err := imageSpec(ctx, conn, pool, a[1])
			if err != nil {
				return err
			}
			if snap != "" {
				return fmt.Errorf("rbd clone: the clone %q names a snapshot", a[1])
			}
			o, err := layout(ctx, conn)
			if err != nil {
				return fmt.Errorf("rbd clone: %w", err)
			}
			return rbd.Clone(ctx, parent, p, name, o)
		})}
	layoutFlags(clone, "the parent's")

	flatten := &cobra.Command{Use: "flatten [POOL/]IMAGE", Short: "Copy a clone's parent data into it and detach it from the parent", Args: cobra.ExactArgs(1),
		RunE: image(func(ctx context.Context, img *rbd.Image, _ []string, out io.Writer) error {
			shown := -1
			if err := img.Flatten(ctx, func(done, total uint64) {
				if pct := int(done * 100 / total); pct != shown && pct%10 == 0 {
					shown = pct
					fmt.Fprintf(os.Stderr, "Image flatten: %d%% complete...\n", pct)
				}
			}); err != nil {
				return err
			}
			fmt.Fprintln(out, "Image flatten: 100% complete...done.")
			return nil
		})}

	children := &cobra.Command{Use: "children [POOL/]IMAGE@SNAP", Short: "List the clones of a snapshot (POOL/IMAGE), in every pool", Args: cobra.ExactArgs(1),
		RunE: image(func(ctx context.Context, img *rbd.Image, _ []string, out io.Writer) error {
			kids, err := img.Children(ctx)
			for _, k := range kids {
				fmt.Fprintln(out, k)
			}
			return err
		})}

	ls := &cobra.Command{Use: "ls [POOL]", Short: "List the pool's images", Args: cobra.MaximumNArgs(1),
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			name := pool
			if len(s.args) == 1 {
				name = s.args[0]
			}
			p, err := s.conn.Pool(ctx, name)
			if err != nil {
				return err
			}
			names, err := rbd.List(ctx, p)
			for _, n := range names {
				fmt.Fprintln(out, n)
			}
			return err
		})}

	info := &cobra.Command{Use: "info [POOL/]IMAGE[@SNAP]", Short: "Show an image's size, layout and snapshots", Args: cobra.ExactArgs(1),
		RunE: image(func(ctx context.Context, img *rbd.Image, _ []string, out io.Writer) error {
			in := img.Info()
			fmt.Fprintf(out, "rbd image '%s':\n", in.Name)
			fmt.Fprintf(out, "\tsize %s in %d objects\n", iecBytes(in.Size), in.Objects)
			fmt.Fprintf(out, "\torder %d (%s objects)\n", in.Order, iecBytes(in.ObjectSize))
			fmt.Fprintf(out, "\tsnapshot_count: %d\n", len(in.Snapshots))
			fmt.Fprintf(out, "\tid: %s\n", in.ID)
			fmt.Fprintf(out, "\tfeatures: %s\n", strings.Join(featureNames(in.Features), ", "))
			if in.DataPool != "" {
				fmt.Fprintf(out, "\tdata_pool: %s\n", in.DataPool)
			}
			fmt.Fprintf(out, "\tblock_name_prefix: %s\n", in.ObjectPrefix)
			fmt.Fprintf(out, "\tformat: 2\n")
			if in.StripeUnit != in.ObjectSize || in.StripeCount != 1 {
				fmt.Fprintf(out, "\tstripe unit: %s\n\tstripe count: %d\n", iecBytes(in.StripeUnit), in.StripeCount)
			}
			if p := in.Parent; p != nil {
				fmt.Fprintf(out, "\tparent: %s/%s@%s\n\toverlap: %s\n", p.Pool, p.Image, p.Snap, iecBytes(p.Overlap))
			}
			return nil
		})}

	du := &cobra.Command{Use: "du [POOL/]IMAGE[@SNAP]", Short: "Show an image's provisioned and used bytes (reads every object's size)", Args: cobra.ExactArgs(1),
		RunE: image(func(ctx context.Context, img *rbd.Image, a []string, out io.Writer) error {
			used, err := img.Used(ctx)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "NAME\tPROVISIONED\tUSED\n%s\t%s\t%s\n", a[0], iecBytes(img.Size()), iecBytes(used))
			return tw.Flush()
		})}

	var allowShrink bool
	resize := &cobra.Command{Use: "resize [POOL/]IMAGE --size SIZE", Short: "Grow or (with --allow-shrink) shrink an image", Args: cobra.ExactArgs(1),
		RunE: image(func(ctx context.Context, img *rbd.Image, _ []string, out io.Writer) error {
			n, err := parseBytes("--size", size, "M")
			if err != nil {
				return err
			}
			if err := img.Resize(ctx, n, allowShrink); err != nil {
				return err
			}
			fmt.Fprintln(out, "Resizing image: 100% complete...done.")
			return nil
		})}
	resize.Flags().StringVarP(&size, "size", "s", "", "new size (M if no unit)")
	resize.Flags().BoolVar(&allowShrink, "allow-shrink", false, "allow shrinking (the data past the new end is discarded)")
	resize.MarkFlagRequired("size")

	rm := &cobra.Command{Use: "rm [POOL/]IMAGE", Short: "Remove an image and its data (refused while it has snapshots or is open)", Args: cobra.ExactArgs(1),
		RunE: named(0, func(ctx context.Context, _ *session, p *client.Pool, name, _ string, out io.Writer) error {
			if err := rbd.Remove(ctx, p, name); err != nil {
				return err
			}
			fmt.Fprintln(out, "Removing image: 100% complete...done.")
			return nil
		})}

	mv := &cobra.Command{Use: "mv [POOL/]SRC DST", Short: "Rename an image (within its pool)", Args: cobra.ExactArgs(2),
		RunE: named(0, func(ctx context.Context, s *session, p *client.Pool, name, _ string, _ io.Writer) error {
			_, dst, _, err := imageSpec(ctx, s.conn, p.Name(), s.args[1])
			if err != nil {
				return err
			}
			return rbd.Rename(ctx, p, name, dst)
		})}

	export := &cobra.Command{Use: "export [POOL/]IMAGE[@SNAP] FILE", Short: "Write the image (or a snapshot) to FILE (- for stdout), holes as sparse regions", Args: cobra.ExactArgs(2),
		RunE: image(func(ctx context.Context, img *rbd.Image, a []string, out io.Writer) error {
			w := out
			if a[1] != "-" {
				f, err := os.Create(a[1])
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			return exportImage(ctx, img, w)
		})}

	cp := &cobra.Command{Use: "cp [POOL/]SRC[@SNAP] [POOL/]DST", Short: "Copy an image (or a snapshot) into a new one, as thin as its data", Args: cobra.ExactArgs(2),
		RunE: image(func(ctx context.Context, img *rbd.Image, a []string, out io.Writer) error {
			conn := img.Pool().Conn()
			p, name, snap, err := imageSpec(ctx, conn, pool, a[1])
			if err != nil {
				return err
			}
			if snap != "" {
				return fmt.Errorf("rbd cp: the destination %q names a snapshot", a[1])
			}
			if err := img.Copy(ctx, p, name); err != nil {
				return err
			}
			fmt.Fprintln(out, "Image copy: 100% complete...done.")
			return nil
		})}

	imp := &cobra.Command{Use: "import FILE [POOL/]IMAGE", Short: "Create an image from FILE (- for stdin); 4 KiB blocks of zeros stay unallocated", Args: cobra.ExactArgs(2),
		RunE: named(1, func(ctx context.Context, s *session, p *client.Pool, name, _ string, _ io.Writer) error {
			return importImage(ctx, p, name, s.args[0])
		})}

	var fromSnap string
	exportDiff := &cobra.Command{Use: "export-diff [POOL/]IMAGE[@SNAP] FILE [--from-snap SNAP]", Short: "Write what changed since --from-snap (or everything) as an RBD diff v1 stream (- for stdout)", Args: cobra.ExactArgs(2),
		RunE: image(func(ctx context.Context, img *rbd.Image, a []string, out io.Writer) error {
			if a[1] == "-" {
				return img.ExportDiff(ctx, fromSnap, out)
			}
			f, err := os.Create(a[1])
			if err != nil {
				return err
			}
			if err := img.ExportDiff(ctx, fromSnap, f); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintln(os.Stderr, "Exporting image: 100% complete...done.")
			return nil
		})}
	exportDiff.Flags().StringVar(&fromSnap, "from-snap", "", "the snapshot the diff starts at (default: an empty image)")
	importDiff := &cobra.Command{Use: "import-diff FILE [POOL/]IMAGE", Short: "Apply an RBD diff stream (- for stdin) to an image that has its start snapshot; its end snapshot is taken", Args: cobra.ExactArgs(2),
		RunE: named(1, func(ctx context.Context, s *session, p *client.Pool, name, snap string, out io.Writer) error {
			if snap != "" {
				return fmt.Errorf("rbd import-diff: %q names a snapshot", s.args[1])
			}
			var r io.Reader = os.Stdin
			if s.args[0] != "-" {
				f, err := os.Open(s.args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			img, err := rbd.Open(ctx, p, name, "")
			if err != nil {
				return err
			}
			defer img.Close(context.WithoutCancel(ctx))
			in, err := img.ImportDiff(ctx, r)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Importing image diff: 100%% complete...done (size %s, %s written, %s zeroed", iecBytes(in.Size), iecBytes(in.Data), iecBytes(in.Zeros))
			if in.To != "" {
				fmt.Fprintf(out, ", snapshot %s", in.To)
			}
			fmt.Fprintln(out, ").")
			return nil
		})}
	diff := &cobra.Command{Use: "diff [POOL/]IMAGE[@SNAP] [--from-snap SNAP]", Short: "List the extents that changed since --from-snap (or hold data)", Args: cobra.ExactArgs(1),
		RunE: image(func(ctx context.Context, img *rbd.Image, _ []string, out io.Writer) error {
			exts, err := img.Changed(ctx, fromSnap)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "Offset\tLength\tType")
			for _, e := range exts {
				fmt.Fprintf(tw, "%d\t%d\tdata\n", e.Off, e.Len)
			}
			return tw.Flush()
		})}
	diff.Flags().StringVar(&fromSnap, "from-snap", "", "the snapshot to compare with (default: an empty image)")

	featureCmd := &cobra.Command{Use: "feature", Short: "Enable or disable an image's features (exclusive-lock, object-map, fast-diff)"}
	for _, enable := range []bool{true, false} {
		verb := map[bool]string{true: "enable", false: "disable"}[enable]
		featureCmd.AddCommand(&cobra.Command{Use: verb + " [POOL/]IMAGE FEATURE...", Short: verb + " features", Args: cobra.MinimumNArgs(2),
			RunE: image(func(ctx context.Context, img *rbd.Image, a []string, _ io.Writer) error {
				f, err := parseFeatures(a[1:])
				if err != nil {
					return err
				}
				return img.UpdateFeatures(ctx, f, enable)
			})})
	}

	objectMapCmd := &cobra.Command{Use: "object-map", Short: "Check or rebuild an image's object map"}
	objectMapCmd.AddCommand(
		&cobra.Command{Use: "check [POOL/]IMAGE[@SNAP]", Short: "Compare the object map with the data objects (fails if it misses one that exists)", Args: cobra.ExactArgs(1),
			RunE: image(func(ctx context.Context, img *rbd.Image, a []string, out io.Writer) error {
				wrong, stale, err := img.CheckObjectMap(ctx)
				if err != nil {
					return err
				}
				for _, m := range stale {
					fmt.Fprintf(out, "object %d: marked but absent (harmless: an interrupted write or removal)\n", m.Object)
				}
				for _, m := range wrong {
					fmt.Fprintf(out, "object %d: exists but the map says absent\n", m.Object)
				}
				if len(wrong) > 0 {
					return fmt.Errorf("rbd object-map check %s: %d objects missing from the map (shoal rbd object-map rebuild %s)", a[0], len(wrong), a[0])
				}
				fmt.Fprintf(out, "Object map check: %d stale entries, none missing.\n", len(stale))
				return nil
			})},
		&cobra.Command{Use: "rebuild [POOL/]IMAGE", Short: "Rebuild the object map from the data objects (as the exclusive lock's holder)", Args: cobra.ExactArgs(1),
			RunE: image(func(ctx context.Context, img *rbd.Image, _ []string, out io.Writer) error {
				if err := img.RebuildObjectMap(ctx); err != nil {
					return err
				}
				fmt.Fprintln(out, "Object Map Rebuild: 100% complete...done.")
				return nil
			})},
	)

	snapCmd := &cobra.Command{Use: "snap", Short: "Image snapshots: create, ls, rm, rollback, purge"}
	snapOf := func(verb, short string, fn func(ctx context.Context, img *rbd.Image, snap string, out io.Writer) error) *cobra.Command {
		return &cobra.Command{Use: verb + " [POOL/]IMAGE@SNAP", Short: short, Args: cobra.ExactArgs(1),
			RunE: named(0, func(ctx context.Context, s *session, p *client.Pool, name, snap string, out io.Writer) error {
				if snap == "" {
					return fmt.Errorf("rbd snap %s: %q names no snapshot (IMAGE@SNAP)", verb, s.args[0])
				}
				img, err := rbd.Open(ctx, p, name, "")
				if err != nil {
					return err
				}
				defer img.Close(context.WithoutCancel(ctx))
				return fn(ctx, img, snap, out)
			})}
	}
	snapCmd.AddCommand(
		snapOf("create", "Take a snapshot", func(ctx context.Context, img *rbd.Image, snap string, _ io.Writer) error {
			return img.SnapCreate(ctx, snap)
		}),
		snapOf("rm", "Remove a snapshot (its space returns as the OSDs trim it)", func(ctx context.Context, img *rbd.Image, snap string, _ io.Writer) error {
			return img.SnapRemove(ctx, snap)
		}),
		snapOf("protect", "Protect a snapshot from removal", func(ctx context.Context, img *rbd.Image, snap string, _ io.Writer) error {
			return img.SnapProtect(ctx, snap, true)
		}),
		snapOf("unprotect", "Let a protected snapshot be removed again", func(ctx context.Context, img *rbd.Image, snap string, _ io.Writer) error {
			return img.SnapProtect(ctx, snap, false)
		}),
		snapOf("rollback", "Make the image what it was at the snapshot (stop its writers first)", func(ctx context.Context, img *rbd.Image, snap string, out io.Writer) error {
			if err := img.SnapRollback(ctx, snap); err != nil {
				return err
			}
			fmt.Fprintln(out, "Rolling back to snapshot: 100% complete...done.")
			return nil
		}),
		&cobra.Command{Use: "ls [POOL/]IMAGE", Short: "List an image's snapshots", Args: cobra.ExactArgs(1),
			RunE: image(func(ctx context.Context, img *rbd.Image, _ []string, out io.Writer) error {
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SNAPID\tNAME\tSIZE\tPROTECTED")
				for _, s := range img.Snapshots() {
					prot := map[bool]string{true: "yes"}[s.Protected]
					if s.Unprotecting {
						prot = "unprotecting"
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s.ID, s.Name, iecBytes(s.Size), prot)
				}
				return tw.Flush()
			})},
		&cobra.Command{Use: "purge [POOL/]IMAGE", Short: "Remove every snapshot of an image (fails on a protected one)", Args: cobra.ExactArgs(1),
			RunE: image(func(ctx context.Context, img *rbd.Image, _ []string, out io.Writer) error {
				for _, s := range img.Snapshots() {
					if err := img.SnapRemove(ctx, s.Name); err != nil {
						return err
					}
				}
				fmt.Fprintln(out, "Removing all snapshots: 100% complete...done.")
				return nil
			})},
	)

	status := &cobra.Command{Use: "status [POOL/]IMAGE", Short: "Show the clients that have the image open (its header's watchers)", Args: cobra.ExactArgs(1),
		RunE: header(func(ctx context.Context, img *rbd.Image, _ []string, out io.Writer) error {
			ws, err := img.Watchers(ctx)
			if err != nil {
				return err
			}
			if len(ws) == 0 {
				fmt.Fprintln(out, "Watchers: none")
				return nil
			}
			fmt.Fprintln(out, "Watchers:")
			for _, w := range ws {
				fmt.Fprintf(out, "\twatcher=%s cookie=%d\n", w.Instance, w.Cookie)
			}
			return nil
		})}
	lockCmd := &cobra.Command{Use: "lock", Short: "Advisory locks on an image (its header): add, ls, rm"}
	var lockTag string
	lockAdd := &cobra.Command{Use: "add [POOL/]IMAGE LOCK-ID", Short: "Take an exclusive lock (or a shared one with --shared TAG)", Args: cobra.ExactArgs(2),
		RunE: header(func(ctx context.Context, img *rbd.Image, a []string, _ io.Writer) error {
			if lockTag != "" {
				return img.Pool().LockShared(ctx, img.HeaderOID(), rbd.LockName, a[1], lockTag, "", 0, false)
			}
			return img.Pool().LockExclusive(ctx, img.HeaderOID(), rbd.LockName, a[1], "", 0, false)
		})}
	lockAdd.Flags().StringVar(&lockTag, "shared", "", "take a shared lock with this tag")
	lockCmd.AddCommand(lockAdd,
		&cobra.Command{Use: "ls [POOL/]IMAGE", Short: "List the image's lockers", Args: cobra.ExactArgs(1),
			RunE: header(func(ctx context.Context, img *rbd.Image, _ []string, out io.Writer) error {
				in, err := img.Pool().LockInfo(ctx, img.HeaderOID(), rbd.LockName)
				if errors.Is(err, client.ErrNotFound) || (err == nil && len(in.Lockers) == 0) {
					return nil
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "There is %d %s lock on this image.\n", len(in.Lockers), in.Type)
				if in.Tag != "" {
					fmt.Fprintf(out, "Lock tag: %s\n", in.Tag)
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "Locker\tID")
				for _, l := range in.Lockers {
					fmt.Fprintf(tw, "%s\t%s\n", l.Name, l.Cookie)
				}
				return tw.Flush()
			})},
		&cobra.Command{Use: "rm [POOL/]IMAGE LOCK-ID LOCKER", Short: "Break a lock (LOCKER as lock ls shows it; fence the holder with shoal osd blocklist add)", Args: cobra.ExactArgs(3),
			RunE: header(func(ctx context.Context, img *rbd.Image, a []string, _ io.Writer) error {
				return img.Pool().BreakLock(ctx, img.HeaderOID(), rbd.LockName, a[2], a[1])
			})},
	)

	var bo bench.BlockOptions
	var ioSize, ioTotal string
	benchC := &cobra.Command{Use: "bench [POOL/]IMAGE --io-type read|write|readwrite", Short: "Drive an image with rbd bench's load (writes overwrite its data)", Args: cobra.ExactArgs(1),
		RunE: image(func(ctx context.Context, img *rbd.Image, _ []string, out io.Writer) error {
			n, err := parseBytes("--io-size", ioSize, "")
			if err != nil {
				return err
			}
			bo.IOSize = int(n)
			if bo.Total, err = parseBytes("--io-total", ioTotal, ""); err != nil {
				return err
			}
			_, err = bench.RunBlock(ctx, img, bo, out)
			return err
		})}
	benchC.Flags().StringVar(&bo.IOType, "io-type", "", "read, write or readwrite")
	benchC.Flags().StringVar(&ioSize, "io-size", "4K", "bytes per I/O")
	benchC.Flags().IntVar(&bo.Threads, "io-threads", 16, "I/Os in flight")
	benchC.Flags().StringVar(&ioTotal, "io-total", "1G", "bytes to transfer")
	benchC.Flags().StringVar(&bo.Pattern, "io-pattern", "seq", "seq or rand")
	benchC.Flags().IntVar(&bo.RWMixRead, "rw-mix-read", 50, "readwrite: percentage of reads")
	benchC.MarkFlagRequired("io-type")

	var socket, listen string
	var readOnly bool
	serve := &cobra.Command{Use: "serve [POOL/]IMAGE[@SNAP]... (--socket PATH | --listen ADDR)",
		Short: "Export images over NBD (fio's nbd engine, nbdinfo, nbdcopy, nbdfuse, qemu-img, nbd-client) until Ctrl-C",
		Long: "Serves each image as the NBD export of its name (an image at a snapshot read-only), on a Unix socket or a TCP address:\n" +
			"  fio --ioengine=nbd --uri='nbd+unix:///IMAGE?socket=PATH' ...\n  nbdinfo 'nbd+unix:///IMAGE?socket=PATH'\n" +
			"On a host with the kernel's nbd module: nbd-client -unix PATH /dev/nbd0 -N IMAGE.",
		Args: cobra.MinimumNArgs(1),
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			if (socket == "") == (listen == "") {
				return fmt.Errorf("rbd nbd serve: give one of --socket PATH and --listen ADDR")
			}
			var exports []nbd.Export
			for _, spec := range s.args {
				p, name, snap, err := imageSpec(ctx, s.conn, pool, spec)
				if err != nil {
					return err
				}
				img, err := rbd.Open(ctx, p, name, snap)
				if err != nil {
					return err
				}
				defer img.Close(context.WithoutCancel(ctx))
				export := name
				if snap != "" {
					export += "@" + snap
				}
				exports = append(exports, nbd.Export{Name: export, Description: p.Name() + "/" + export, Device: img, ReadOnly: readOnly || snap != ""})
			}
			network, addr := "tcp", listen
			if socket != "" {
				network, addr = "unix", socket
				os.Remove(socket) // a socket left by a server that was killed
			}
			l, err := net.Listen(network, addr)
			if err != nil {
				return fmt.Errorf("rbd nbd serve: %w", err)
			}
			if socket != "" {
				defer os.Remove(socket)
			}
			for _, e := range exports {
				fmt.Fprintf(out, "serving %s (%s, %s) on %s %s\n", e.Name, e.Description, iecBytes(e.Device.Size()), network, l.Addr())
			}
			return (&nbd.Server{Exports: exports}).Serve(ctx, l)
		})}
	serve.Flags().StringVar(&socket, "socket", "", "listen on this Unix socket")
	serve.Flags().StringVar(&listen, "listen", "", "listen on this TCP address (HOST:PORT)")
	serve.Flags().BoolVar(&readOnly, "read-only", false, "refuse writes")
	nbdCmd := &cobra.Command{Use: "nbd", Short: "Serve images over the Network Block Device protocol"}
	nbdCmd.AddCommand(serve)

	cmd.AddCommand(create, clone, flatten, children, ls, info, du, resize, rm, mv, cp, export, imp, exportDiff, importDiff, diff, featureCmd, objectMapCmd, snapCmd, status, lockCmd, benchC, nbdCmd)
	return cmd
}

// parseFeatures reads feature names (rbd's) into their bits.
func parseFeatures(names []string) (uint64, error) {
	var f uint64
next:
	for _, n := range names {
		for bit, name := range clsrbd.FeatureNames {
			if name == strings.TrimSpace(n) {
				f |= bit
				continue next
			}
		}
		return 0, fmt.Errorf("unknown image feature %q (layering, striping, exclusive-lock, object-map, fast-diff, data-pool)", n)
	}
	return f, nil
}

// featureNames are the names of the features in f, in bit order.
func featureNames(f uint64) []string {
	var out []string
	for bit := uint64(1); bit != 0 && bit <= f; bit <<= 1 {
		if f&bit != 0 {
			if n, ok := clsrbd.FeatureNames[bit]; ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// imageSpec resolves [POOL/]IMAGE[@SNAP], the pool defaulting to def.
func imageSpec(ctx context.Context, conn *client.Conn, def, spec string) (p *client.Pool, name, snap string, err error) {
	pool := def
	if i := strings.IndexByte(spec, '/'); i >= 0 {
		pool, spec = spec[:i], spec[i+1:]
	}
	name, snap, _ = strings.Cut(spec, "@")
	if name == "" {
		return nil, "", "", fmt.Errorf("rbd: no image name in %q", spec)
	}
	p, err = conn.Pool(ctx, pool)
	return p, name, snap, err
}

// parseBytes parses a size option: a number with an optional IEC suffix
// (K, M, G, T), or with none, of unit (rbd's --size is in MiB).
func parseBytes(flag, s, unit string) (uint64, error) {
	if s != "" && s[len(s)-1] >= '0' && s[len(s)-1] <= '9' {
		s += unit
	}
	n, err := config.ParseSize(s)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%s %q: want a positive size such as 4096, 64K, 10G", flag, s)
	}
	return n, nil
}

// iecBytes formats a byte count as rbd does ("10 GiB", "4 MiB").
func iecBytes(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d %s", int64(f), units[i])
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}

// exportChunk is the bytes export and import move at once.
const exportChunk = 4 << 20

// exportImage writes the image to w. Zero blocks of a file are skipped
// (left as holes), so an export of a thin image to a file is sparse.
func exportImage(ctx context.Context, img *rbd.Image, w io.Writer) error {
	size := img.Size()
	buf := make([]byte, exportChunk)
	seeker, sparse := w.(*os.File)
	var written uint64
	start := time.Now()
	for off := uint64(0); off < size; off += exportChunk {
		n := min(exportChunk, size-off)
		if err := img.ReadAt(ctx, buf[:n], off); err != nil {
			return err
		}
		if sparse && isZero(buf[:n]) {
			if _, err := seeker.Seek(int64(n), io.SeekCurrent); err != nil {
				sparse = false // a pipe: write the zeros
			} else {
				continue
			}
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		written += n
	}
	if sparse {
		if err := seeker.Truncate(int64(size)); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "Exporting image: 100%% complete...done (%s, %s of data, %s).\n", iecBytes(size), iecBytes(written), time.Since(start).Round(time.Millisecond))
	return nil
}

// importImage creates image name in p from file path ("-": stdin), of
// the file's size (stdin: read whole first), writing only the 4 KiB
// blocks that are not all zeros (rbd import's default sparse size;
// rbd.Image.WriteSparse).
func importImage(ctx context.Context, p *client.Pool, name, path string) error {
	var r io.Reader
	var size uint64
	if path == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		r, size = strings.NewReader(string(b)), uint64(len(b))
	} else {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		r, size = f, uint64(st.Size())
	}
	if err := rbd.Create(ctx, p, name, rbd.Options{Size: size}); err != nil {
		return err
	}
	img, err := rbd.Open(ctx, p, name, "")
	if err != nil {
		return err
	}
	defer img.Close(context.WithoutCancel(ctx))
	buf := make([]byte, exportChunk)
	for off := uint64(0); off < size; {
		n, err := io.ReadFull(r, buf[:min(exportChunk, size-off)])
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("import %s: %w", path, err)
		}
		if err := img.WriteSparse(ctx, buf[:n], off); err != nil {
			return err
		}
		off += uint64(n)
	}
	fmt.Fprintln(os.Stderr, "Importing image: 100% complete...done.")
	return nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

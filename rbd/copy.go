package rbd

import (
	"context"
	"fmt"

	"github.com/shoal-project/shoal/client"
)

// SparseBlock is the granularity at which WriteSparse skips zeros (rbd
// import's default --sparse-size).
const SparseBlock = 4096

// WriteSparse writes p at off, skipping every SparseBlock-aligned block
// of p that is all zeros (adjacent written blocks go in one write): on a
// thin image a zero block need not be written — it reads as zeros — so
// an import or copy allocates only the data.
func (img *Image) WriteSparse(ctx context.Context, p []byte, off uint64) error {
	start := -1 // the first block of the run of data blocks being gathered
	flush := func(end int) error {
		if start < 0 {
			return nil
		}
		err := img.WriteAt(ctx, p[start:end], off+uint64(start))
		start = -1
		return err
	}
	for at := 0; at < len(p); at += SparseBlock {
		if !isZero(p[at:min(at+SparseBlock, len(p))]) {
			if start < 0 {
				start = at
			}
		} else if err := flush(at); err != nil {
			return err
		}
	}
	return flush(len(p))
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Copy makes image dst in pool a copy of img (at its snapshot, if it was
// opened at one) with the same size and layout, data pool included (rbd
// cp): the data is read an object's worth at a time and only the blocks
// that are not all zeros are written, so the copy is as thin as the
// data. Snapshots are not copied, as rbd cp does not copy them.
func (img *Image) Copy(ctx context.Context, pool *client.Pool, dst string) error {
	in := img.Info()
	o := Options{Size: in.Size, Order: in.Order, StripeUnit: in.StripeUnit, StripeCount: in.StripeCount}
	if img.data.ID() != img.pool.ID() {
		o.DataPool = img.data
	}
	if err := Create(ctx, pool, dst, o); err != nil {
		return err
	}
	out, err := Open(ctx, pool, dst, "")
	if err != nil {
		return err
	}
	defer out.Close(context.WithoutCancel(ctx))
	buf := make([]byte, in.ObjectSize)
	for off := uint64(0); off < in.Size; off += in.ObjectSize {
		n := min(in.ObjectSize, in.Size-off)
		if err := img.ReadAt(ctx, buf[:n], off); err != nil {
			return fmt.Errorf("rbd: cp %s to %s: %w", img.name, dst, err)
		}
		if err := out.WriteSparse(ctx, buf[:n], off); err != nil {
			return fmt.Errorf("rbd: cp %s to %s: %w", img.name, dst, err)
		}
	}
	return nil
}

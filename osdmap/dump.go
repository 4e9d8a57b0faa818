package osdmap

import (
	"bufio"
	"fmt"
	"io"

	"github.com/shoal-project/shoal/crush"
)

// DumpPGs writes every PG of a pool as `osdmaptool --test-map-pgs-dump`
// does ("pgid<TAB>[acting]<TAB>primary"), or with all set to true as
// --test-map-pgs-dump-all does ("pgid raw ([..], pN) up (..) acting (..)",
// raw being CRUSH's choice before pg_upmap and pg_upmap_items).
func DumpPGs(w io.Writer, m *Map, pool int64, all bool) error {
	p, err := m.Pool(pool)
	if err != nil {
		return err
	}
	mps, err := m.PGMappings(pool)
	if err != nil {
		return err
	}
	raws, err := m.CrushOSDs(pool)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "pool %d pg_num %d\n", pool, p.PGNum)
	for s, mp := range mps {
		pg := PGID{Pool: pool, Seed: uint32(s)}
		if all {
			fmt.Fprintf(bw, "%s raw (%s, p%d) up (%s, p%d) acting (%s, p%d)\n", pg,
				crush.FormatMapping(raws[s]), pickPrimary(raws[s]), crush.FormatMapping(mp.Up), mp.UpPrimary,
				crush.FormatMapping(mp.Acting), mp.ActingPrimary)
		} else {
			fmt.Fprintf(bw, "%s\t%s\t%d\n", pg, crush.FormatMapping(mp.Acting), mp.ActingPrimary)
		}
	}
	return bw.Flush()
}

// MapObject writes an object's PG and acting set as `osdmaptool
// --test-map-object` does: " object 'NAME' -> PGID -> [acting]".
func MapObject(w io.Writer, m *Map, pool int64, name, namespace string) error {
	pg, err := m.ObjectToPG(pool, name, namespace)
	if err != nil {
		return err
	}
	mp, err := m.MapPG(pg)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, " object '%s' -> %s -> %s\n", name, pg, crush.FormatMapping(mp.Acting))
	return err
}

package osd

// Map sharing: OSDs hand each other newer maps, as Ceph's do (every
// message carries the sender's epoch; a peer behind is sent the maps it
// lacks). An OSD that lost the MONs but not its peers — a partition, or a
// MON quorum it cannot reach — otherwise never learns that it was marked
// down, that its PGs moved, or that a pool was created, and every PG it
// shares stalls at the first map change: its peers' queries wait for an
// epoch it cannot get. Here the OSD notices a newer epoch on a message or
// a heartbeat reply, gives the MONs mapShareGrace to deliver it, and then
// asks peers for their map (msgGetMap), installing it as one from the MONs.

import (
	"context"
	"fmt"
	"time"

	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// mapShareGrace is how long an OSD that saw a newer epoch waits for the
// MONs' subscription to deliver it before it asks a peer.
const mapShareGrace = time.Second

// learnEpoch notes that epoch e exists — a peer at addr (OSD id; -1: any
// up OSD of the current map, in turn) holds it — and, unless a fetch is
// under way, fetches it from the peers if the MONs have not delivered it
// within mapShareGrace.
func (d *OSD) learnEpoch(e uint32, id int32, addr string) {
	if d.epoch() >= e {
		return
	}
	d.shareMu.Lock()
	if d.sharing {
		d.shareMu.Unlock()
		return
	}
	d.sharing = true
	d.shareMu.Unlock()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer func() {
			d.shareMu.Lock()
			d.sharing = false
			d.shareMu.Unlock()
		}()
		if d.awaitEpoch(d.ctx, e, mapShareGrace, false) || d.ctx.Err() != nil {
			return // the MONs delivered it
		}
		if err := d.fetchMap(e, id, addr); err != nil {
			d.log.Warn("fetching a newer map from the peers", "epoch", e, "err", err)
		}
	}()
}

// fetchMap asks OSD id at addr (id -1: each up OSD of the current map in
// turn) for a map of epoch e or newer and installs it.
func (d *OSD) fetchMap(e uint32, id int32, addr string) error {
	type peerAddr struct {
		id   int32
		addr string
	}
	var peers []peerAddr
	if id >= 0 {
		peers = append(peers, peerAddr{id, addr})
	} else {
		m, _ := d.curMap()
		for i, o := range m.OSDs {
			if int32(i) != d.id && o.Exists && o.Up {
				peers = append(peers, peerAddr{int32(i), o.BackAddr()})
			}
		}
	}
	var last error
	for _, p := range peers {
		ctx, cancel := context.WithTimeout(d.ctx, 2*time.Second)
		b, err := d.call(ctx, p.id, p.addr, msgGetMap, nil)
		cancel()
		if err != nil {
			last = err
			continue
		}
		m, err := osdmap.Decode(b)
		if err != nil {
			last = fmt.Errorf("osd.%d's map: %w", p.id, err)
			continue
		}
		if uint32(m.Epoch) < e {
			last = fmt.Errorf("osd.%d has map %d, not %d", p.id, m.Epoch, e)
			continue
		}
		d.log.Info("map from a peer: the MONs did not deliver it", "epoch", m.Epoch, "peer", p.id)
		d.handleMap(m)
		return nil
	}
	if last == nil {
		last = fmt.Errorf("no peer to ask")
	}
	return last
}

// handleGetMap answers msgGetMap with this OSD's installed map.
func (d *OSD) handleGetMap() ([]byte, error) {
	m := d.installed.Load()
	if m == nil {
		return nil, fmt.Errorf("%w: osd.%d has no map yet", osdop.ErrRetry, d.id)
	}
	return m.Encode(), nil
}

package osd

// Failure detection: heartbeats to the OSDs this one watches (front and
// back), failure reports to the MONs, and beacons that show the MONs this
// OSD is alive (Ceph's OSD::heartbeat and MOSDBeacon).

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
)

// reportFailure tells the MONs that osd id (at addr) does not answer;
// immediate when its port refused the connection (its process is gone).
func (d *OSD) reportFailure(id int32, addr string, immediate bool) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
		defer cancel()
		r, err := d.mc.Command(ctx, "osd failure", map[string]string{"target": strconv.Itoa(int(id)), "reporter": strconv.Itoa(int(d.id)), "addr": addr, "immediate": strconv.FormatBool(immediate)})
		if err != nil {
			d.log.Warn("report failure", "target", id, "err", err)
			return
		}
		d.log.Info("reported failure", "target", id, "mon", r.Message)
	}()
}

// beaconLoop tells the MONs every osd_beacon_report_interval that this
// OSD is alive and reaches them (Ceph's MOSDBeacon): one they stop
// hearing from for mon_osd_report_timeout is marked down.
func (d *OSD) beaconLoop() {
	defer d.wg.Done()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-d.clock.After(time.Duration(d.conf().Seconds("osd_beacon_report_interval") * float64(time.Second))):
		}
		ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
		if _, err := d.mc.Command(ctx, "osd beacon", map[string]string{"id": strconv.Itoa(int(d.id)), "addr": d.addr}); err != nil && d.ctx.Err() == nil {
			d.log.Warn("beacon to the MONs", "err", err)
		}
		cancel()
	}
}

// heartbeat pings its peers (heartbeatPeers) each osd_heartbeat_interval
// and reports those silent for osd_heartbeat_grace.
func (d *OSD) heartbeat() {
	for {
		interval := time.Duration(d.conf().Seconds("osd_heartbeat_interval") * float64(time.Second))
		grace := time.Duration(d.conf().Seconds("osd_heartbeat_grace") * float64(time.Second))
		select {
		case <-d.ctx.Done():
			return
		case <-d.clock.After(interval):
		}
		m, _ := d.curMap()
		var wg sync.WaitGroup
		pinged := map[string]bool{}
		for _, id := range d.heartbeatPeers(m) {
			o := m.OSDs[id]
			// front and back: a peer silent on either is reported
			addrs := []string{o.Addr}
			if o.ClusterAddr != "" {
				addrs = append(addrs, o.ClusterAddr)
			}
			for _, addr := range addrs {
				a, _, _ := strings.Cut(addr, "/")
				pinged[a] = true
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(d.ctx, interval)
					defer cancel()
					r, err := d.ping(ctx, id, addr) // and renew the read lease
					if err == nil && r.Epoch > d.epoch() {
						d.learnEpoch(r.Epoch, id, addr)
					}
					d.peerMu.Lock()
					last, ok := d.lastHB[a]
					if err == nil || !ok {
						d.lastHB[a] = d.clock.Now()
					}
					d.peerMu.Unlock()
					if err != nil && ok && d.clock.Since(last) > grace {
						d.reportFailure(id, o.Addr, false)
					}
				}()
			}
		}
		wg.Wait()
		d.peerMu.Lock()
		maps.DeleteFunc(d.lastHB, func(a string, _ time.Time) bool { return !pinged[a] }) // peers gone or moved
		d.peerMu.Unlock()
	}
}

// heartbeatPeers are the up OSDs this one heartbeats in map m: those it
// shares PGs with (acting sets and backfill targets), then its
// neighbours by id around the ring of up OSDs, up to
// osd_heartbeat_min_peers (Ceph's OSD::maybe_update_heartbeat_peers).
func (d *OSD) heartbeatPeers(m *osdmap.Map) []int32 {
	shared := map[int32]bool{}
	d.mu.RLock()
	for _, pg := range d.pgs {
		pg.mu.Lock()
		if pg.ps.State != peering.Stray {
			writers, _ := pg.ps.Interval.Writers()
			for _, o := range writers {
				shared[o] = true
			}
		}
		pg.mu.Unlock()
	}
	d.mu.RUnlock()
	var up []int32
	for i, o := range m.OSDs {
		if o.Exists && o.Up {
			up = append(up, int32(i))
		}
	}
	return pickHeartbeatPeers(d.id, up, shared, int(d.conf().Int("osd_heartbeat_min_peers")))
}

// pickHeartbeatPeers chooses self's heartbeat peers among up (ascending
// ids): every up OSD in shared, then the next ones after self around the
// ring of up ids until there are min. Sorted.
func pickHeartbeatPeers(self int32, up []int32, shared map[int32]bool, min int) []int32 {
	var peers []int32
	for _, o := range up {
		if o != self && shared[o] {
			peers = append(peers, o)
		}
	}
	start, _ := slices.BinarySearch(up, self+1)
	for i := range up {
		if len(peers) >= min {
			break
		}
		o := up[(start+i)%len(up)]
		if o != self && !slices.Contains(peers, o) {
			peers = append(peers, o)
		}
	}
	slices.Sort(peers)
	return peers
}

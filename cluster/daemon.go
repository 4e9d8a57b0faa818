// Package cluster runs Shoal's daemons from a shoal.conf and manages a
// local cluster: `shoal up` writes the configuration and keyring, starts a
// MON (or three) and N OSDs as separate processes, creates the default
// pool and waits for health; `shoal down` stops them by their pid files.
//
// Layout of a data directory (default ./shoal-data):
//
//	shoal.conf        the cluster's configuration (ceph.conf style)
//	keyring           the cluster key (mode 0600)
//	run/<name>.pid    each running daemon's pid (mon.a, osd.0, …)
//	log/<name>.log    each daemon's log
//	mon.<id>/         a MON's raft log and snapshots
//	osd.<n>/          an OSD's whoami and object store
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/mon"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/osd"
)

// Conf is a loaded shoal.conf with its directory (what $data means).
type Conf struct {
	Path string
	Dir  string
	File *config.File
}

// FindConf locates the configuration: path if given, else $SHOAL_CONF,
// else ./shoal-data/shoal.conf.
func FindConf(path string) (*Conf, error) {
	if path == "" {
		path = os.Getenv("SHOAL_CONF")
	}
	if path == "" {
		path = filepath.Join("shoal-data", "shoal.conf")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	f, err := config.Load(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no cluster configuration at %s (start one with `shoal up`, or give --conf or $SHOAL_CONF)", path)
	}
	if err != nil {
		return nil, err
	}
	return &Conf{Path: abs, Dir: filepath.Dir(abs), File: f}, nil
}

// For is an entity's configuration with $data set.
func (c *Conf) For(entity string) *config.Config {
	cfg := c.File.For(entity)
	cfg.SetDataDir(c.Dir)
	return cfg
}

// Keyring loads the cluster key for entity.
func (c *Conf) Keyring(entity string) (msgr.Keyring, error) {
	return msgr.LoadKeyring(c.For(entity).String("keyring"), entity)
}

// FileKeys loads every entity's key and caps of entity's keyring file.
func (c *Conf) FileKeys(entity string) (map[string]msgr.KeyringEntry, error) {
	return msgr.ReadKeyring(c.For(entity).String("keyring"))
}

// ClientConfig is how entity (configured as configEntity) reaches the
// cluster with key kr: the MONs, rados_osd_op_timeout,
// objecter_inflight_op_bytes, ms_mode and ms_session_ttl; an ms_mode that
// is neither crc nor secure is an error.
func (c *Conf) ClientConfig(configEntity string, kr msgr.Keyring) (client.Config, error) {
	cfg := c.For(configEntity)
	sess, err := msgr.SessionConfig(msgr.Config{}, cfg.String("ms_mode"), cfg.Seconds("ms_session_ttl"))
	if err != nil {
		return client.Config{}, fmt.Errorf("%s: %w", configEntity, err)
	}
	return client.Config{MonAddrs: c.MonAddrs(), Keyring: kr,
		OpTimeout:     time.Duration(cfg.Seconds("rados_osd_op_timeout") * float64(time.Second)),
		InflightBytes: int64(cfg.Size("objecter_inflight_op_bytes")),
		Mode:          sess.Mode, SessionTTL: sess.SessionTTL}, nil
}

// MonAddrs are the MONs' addresses (mon_host).
func (c *Conf) MonAddrs() []string {
	return monc.ParseMonHost(c.For("client").String("mon_host"))
}

// daemonLog opens the daemon's log file and returns a logger writing to it.
func daemonLog(c *Conf, name string) (*slog.Logger, io.Closer, error) {
	path := c.For(name).String("log_file")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})).With("daemon", name), f, nil
}

func pidPath(c *Conf, name string) string { return filepath.Join(c.Dir, "run", name+".pid") }

func writePid(c *Conf, name string) error {
	if err := os.MkdirAll(filepath.Join(c.Dir, "run"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(pidPath(c, name), []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o644)
}

// tuneGC sets the daemon's garbage collector from its configuration:
// daemon_gc_percent (0: gcPercent) unless GOGC is set, and a soft memory
// limit of memLimit bytes (0: none) unless GOMEMLIMIT is set.
func tuneGC(cfg *config.Config, gcPercent int, memLimit int64) {
	if p := int(cfg.Int("daemon_gc_percent")); p > 0 {
		gcPercent = p
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if memLimit > 0 {
		setMemoryLimit(memLimit)
	}
}

// setMemoryLimit sets the Go heap's soft limit to n bytes unless the
// GOMEMLIMIT environment variable sets it.
func setMemoryLimit(n int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(n)
	}
}

// waitSignal blocks until SIGINT or SIGTERM.
func waitSignal() os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(ch)
	return <-ch
}

// signalCh delivers the process's SIGINT or SIGTERM (for the life of the
// process: daemons run until one arrives).
func signalCh() <-chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	return ch
}

// clientDaemon is what a client daemon (a gateway, a manager) runs
// with: its log, its key and its connection to the cluster.
type clientDaemon struct {
	log      *slog.Logger
	closeLog io.Closer
	kr       msgr.Keyring
	conn     *client.Conn
}

// startClientDaemon opens the log of daemon name (configured by its
// section), sets its GC (gcPercent), and connects as entity. A MON that
// has not yet applied the entity's key (`shoal up` made it a moment ago
// through another MON) refuses it, so it tries again for up to a minute.
func startClientDaemon(c *Conf, name, entity string, gcPercent int) (*clientDaemon, error) {
	kr, err := c.Keyring(entity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	log, closer, err := daemonLog(c, name)
	if err != nil {
		return nil, fmt.Errorf("%s: log: %w", name, err)
	}
	tuneGC(c.For(name), gcPercent, 0)
	ccfg, err := c.ClientConfig(name, kr)
	if err != nil {
		closer.Close()
		return nil, err
	}
	ccfg.Logger = log
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		conn, err := client.Connect(ctx, ccfg)
		if err == nil {
			return &clientDaemon{log: log, closeLog: closer, kr: kr, conn: conn}, nil
		}
		log.Warn("cannot connect yet", "err", err)
		select {
		case <-ctx.Done():
			closer.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (d *clientDaemon) close() {
	d.conn.Close()
	d.closeLog.Close()
}

// RunMon runs MON id (its [mon.id] section gives public_addr) until
// SIGINT or SIGTERM.
func RunMon(c *Conf, id string) error {
	name := "mon." + id
	cfg := c.For(name)
	addr := cfg.String("public_addr")
	if addr == "" {
		return fmt.Errorf("%s: no public_addr in [%s] of %s", name, name, c.Path)
	}
	kr, err := c.Keyring(name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	keys, err := c.FileKeys(name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	log, closer, err := daemonLog(c, name)
	if err != nil {
		return fmt.Errorf("%s: log: %w", name, err)
	}
	defer closer.Close()
	tuneGC(cfg, 100, 0)
	peers, join, err := c.initialMons(id)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	removed := make(chan struct{})
	d, err := mon.Start(mon.Options{Addr: addr, Peers: peers, Join: join, DataDir: cfg.String("mon_data"),
		FSID: cfg.String("fsid"), Keyring: kr, FileKeys: keys, Config: c.File, Name: name, Logger: log,
		OnRemoved: func() { close(removed) }})
	if err != nil {
		log.Error("start failed", "err", err)
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := writePid(c, name); err != nil {
		d.Close()
		return err
	}
	log.Info("started", "addr", addr, "initial_members", peers, "join", join)
	select {
	case sig := <-signalCh():
		log.Info("stopping", "signal", sig.String())
	case <-removed:
		log.Info("stopping: removed from the MON map")
	}
	os.Remove(pidPath(c, name))
	return d.Close()
}

// initialMons are the messenger addresses of mon_initial_members (each
// [mon.ID]'s public_addr, of those still in the file), or mon_host's
// when it is unset, and whether MON id is not among them (it joins a
// running cluster).
func (c *Conf) initialMons(id string) (peers []string, join bool, err error) {
	ids := monc.ParseMonHost(c.For("mon." + id).String("mon_initial_members"))
	if len(ids) == 0 {
		return c.MonAddrs(), false, nil
	}
	for _, m := range ids {
		// one removed since (`shoal mon rm` drops its section) no longer
		// matters: only a new cluster's MONs use the list
		if a := c.monAddr(m); a != "" {
			peers = append(peers, a)
		}
	}
	return peers, !slices.Contains(ids, id), nil
}

// RunOSD runs the OSD whose data directory is dir until SIGINT or SIGTERM.
func RunOSD(c *Conf, dir string) error {
	name := "osd"
	if b, err := os.ReadFile(filepath.Join(dir, "whoami")); err == nil {
		name = "osd." + strings.TrimSpace(string(b))
	}
	cfg := c.For(name)
	kr, err := c.Keyring(name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	logName := name
	if name == "osd" { // a new OSD, named after its directory until it has an id
		logName = filepath.Base(dir)
	}
	log, closer, err := daemonLog(c, logName)
	if err != nil {
		return fmt.Errorf("%s: log: %w", name, err)
	}
	defer closer.Close()
	addr := cfg.String("public_addr")
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	keys, err := c.FileKeys(name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	tuneGC(cfg, 100, osd.Memory(cfg).GoMemLimit())
	class := cfg.String("crush_device_class")
	if b, err := os.ReadFile(filepath.Join(dir, "crush_device_class")); err == nil {
		class = strings.TrimSpace(string(b))
	}
	d, err := osd.Start(osd.Options{DataDir: dir, Addr: addr, ClusterAddr: cfg.String("cluster_addr"), MonAddrs: c.MonAddrs(), Keyring: kr, FileKeys: keys, Config: c.File, Logger: log, Class: class, SetMemoryLimit: setMemoryLimit})
	if err != nil {
		log.Error("start failed", "err", err)
		return fmt.Errorf("%s: %w", name, err)
	}
	name = fmt.Sprintf("osd.%d", d.ID())
	if err := writePid(c, name); err != nil {
		d.Close()
		return err
	}
	sig := waitSignal()
	log.Info("stopping", "signal", sig.String())
	os.Remove(pidPath(c, name))
	return d.Close()
}

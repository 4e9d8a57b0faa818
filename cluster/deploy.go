package cluster

import (
	"crypto/rand"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/shoal-project/shoal/internal/durable"
	"github.com/shoal-project/shoal/msgr"
)

// ComposeOptions shape a multi-host cluster for Docker Compose (`shoal
// deploy compose`): every daemon in a container of its own on one
// network, OSD hosts named osd-1, osd-2, … so that CRUSH's failure domain
// (host) is the container.
type ComposeOptions struct {
	Dir       string // where the files go (made; must not hold a cluster already)
	Mons      int    // 1, 3 or 5
	OSDHosts  int    // hosts with one OSD each
	Gateways  int    // S3 gateways
	Subnet    string // the network's IPv4 /24, e.g. 172.28.0.0/24
	Image     string // the image every container runs (/shoal in it)
	PoolSize  int    // osd_pool_default_size; 0: min(3, OSDHosts)
	ExtraConf string // "name = value" lines added to [global]
}

// ComposeAddrs are where a compose cluster's daemons listen.
type ComposeAddrs struct {
	Mons     []string // host:port of each MON
	OSDs     []string // IP of each OSD host
	Gateways []string // host:port of each S3 gateway
}

// Compose writes a cluster for Docker Compose into o.Dir: the shared
// keyring, a client configuration (shoal.conf, for the host's shoal to
// reach the containers), one directory per container holding its own
// shoal.conf and keyring (mounted at /var/lib/shoal: the daemon's data lives
// there), and docker-compose.yml. A compose file for fewer OSD hosts than
// the pools' size needs (osd_pool_default_size, failure domain host) is
// refused: its PGs could never be whole.
func Compose(o ComposeOptions) (ComposeAddrs, error) {
	var addrs ComposeAddrs
	if o.Mons != 1 && o.Mons != 3 && o.Mons != 5 {
		return addrs, fmt.Errorf("deploy compose: --mons %d: a quorum needs 1, 3 or 5 MONs", o.Mons)
	}
	if o.PoolSize == 0 {
		o.PoolSize = min(3, o.OSDHosts)
	}
	if o.OSDHosts < 1 || o.OSDHosts < o.PoolSize {
		return addrs, fmt.Errorf("deploy compose: %d OSD hosts: pools of size %d spread over hosts need at least %d", o.OSDHosts, o.PoolSize, max(o.PoolSize, 1))
	}
	if o.Gateways < 0 || o.Mons+o.OSDHosts+o.Gateways > 200 {
		return addrs, fmt.Errorf("deploy compose: %d containers: at most 200 on one /24", o.Mons+o.OSDHosts+o.Gateways)
	}
	prefix, err := netip.ParsePrefix(o.Subnet)
	if err != nil || !prefix.Addr().Is4() || prefix.Bits() != 24 || prefix.Masked() != prefix {
		return addrs, fmt.Errorf("deploy compose: --subnet %q: want an IPv4 /24 such as 172.28.0.0/24", o.Subnet)
	}
	if o.Image == "" {
		return addrs, fmt.Errorf("deploy compose: no image")
	}
	if _, err := os.Stat(filepath.Join(o.Dir, "docker-compose.yml")); err == nil {
		return addrs, fmt.Errorf("deploy compose: %s already holds a cluster", o.Dir)
	}
	ip := func(host byte) string {
		b := prefix.Addr().As4()
		b[3] = host
		return netip.AddrFrom4(b).String()
	}
	// hosts: .11… MONs, .21… OSD hosts, .41… gateways
	var monIDs []string
	for i := range o.Mons {
		monIDs = append(monIDs, monNames[i])
		addrs.Mons = append(addrs.Mons, ip(byte(11+i))+":6789")
	}
	for i := range o.OSDHosts {
		addrs.OSDs = append(addrs.OSDs, ip(byte(21+i)))
	}
	for i := range o.Gateways {
		addrs.Gateways = append(addrs.Gateways, ip(byte(41+i))+":7480")
	}
	keys := map[string]msgr.KeyringEntry{
		"client.admin": {Caps: map[string]string{"mon": "allow *", "osd": "allow *"}},
		"mon.":         {Caps: map[string]string{"mon": "allow *"}},
		"osd.":         {Caps: map[string]string{"mon": "profile osd", "osd": "allow *"}},
	}
	for n, e := range keys {
		if e.Key, err = msgr.NewKey(); err != nil {
			return addrs, err
		}
		keys[n] = e
	}
	fsid := make([]byte, 16)
	rand.Read(fsid)
	var g strings.Builder
	fmt.Fprintf(&g, "# written by `shoal deploy compose`; see docs/deploy.md\n[global]\n")
	fmt.Fprintf(&g, "fsid = %x-%x-%x-%x-%x\n", fsid[0:4], fsid[4:6], fsid[6:8], fsid[8:10], fsid[10:])
	fmt.Fprintf(&g, "mon_host = %s\nmon_initial_members = %s\nkeyring = $data/keyring\n", strings.Join(addrs.Mons, ","), strings.Join(monIDs, ","))
	fmt.Fprintf(&g, "osd_pool_default_size = %d\n", o.PoolSize)
	if o.ExtraConf != "" {
		g.WriteString(strings.TrimSpace(o.ExtraConf) + "\n")
	}
	for i, id := range monIDs {
		fmt.Fprintf(&g, "\n[mon.%s]\npublic_addr = %s\n", id, addrs.Mons[i])
	}
	global := g.String()
	write := func(sub, extra string) error {
		d := filepath.Join(o.Dir, sub)
		if err := os.MkdirAll(filepath.Join(d, "tmp"), 0o755); err != nil {
			return err
		}
		if err := msgr.WriteKeyring(filepath.Join(d, "keyring"), keys); err != nil {
			return err
		}
		return durable.WriteFile(filepath.Join(d, "shoal.conf"), []byte(global+extra), 0o644)
	}
	if err := write("", ""); err != nil { // the host's client configuration
		return addrs, err
	}
	var y strings.Builder
	fmt.Fprintf(&y, "# written by `shoal deploy compose`; see docs/deploy.md\nnetworks:\n  shoal:\n    ipam:\n      config:\n        - subnet: %s\nservices:\n", prefix)
	service := func(name, ipAddr string, args ...string) {
		fmt.Fprintf(&y, "  %s:\n    image: %s\n    hostname: %s\n    command: [\"-c\", \"/var/lib/shoal/shoal.conf\"", name, o.Image, name)
		for _, a := range args {
			fmt.Fprintf(&y, ", %q", a)
		}
		fmt.Fprintf(&y, "]\n    environment:\n      TMPDIR: /var/lib/shoal/tmp\n    volumes:\n      - ./%s:/var/lib/shoal\n    networks:\n      shoal:\n        ipv4_address: %s\n    stop_grace_period: 20s\n", name, ipAddr)
	}
	for i, id := range monIDs {
		name := "mon-" + id
		if err := write(name, ""); err != nil {
			return addrs, err
		}
		service(name, strings.Split(addrs.Mons[i], ":")[0], "mon", "--id", id)
	}
	for i, a := range addrs.OSDs {
		name := fmt.Sprintf("osd-%d", i+1)
		if err := write(name, fmt.Sprintf("\n[osd]\npublic_addr = %s:6800\n", a)); err != nil {
			return addrs, err
		}
		service(name, a, "osd", "--data", "/var/lib/shoal/osd")
	}
	for i, a := range addrs.Gateways {
		name := fmt.Sprintf("gw-%d", i+1)
		if err := write(name, ""); err != nil {
			return addrs, err
		}
		service(name, strings.Split(a, ":")[0], "--name", "client.admin", "gateway", "--id", name, "--listen", "0.0.0.0:7480")
	}
	return addrs, durable.WriteFile(filepath.Join(o.Dir, "docker-compose.yml"), []byte(y.String()), 0o644)
}

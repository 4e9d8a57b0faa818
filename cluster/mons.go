package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/internal/durable"
	"github.com/shoal-project/shoal/mon"
	"github.com/shoal-project/shoal/monc"
)

// MonIDs are the ids of the MONs the configuration names: its [mon.ID]
// sections with a public_addr, sorted.
func (c *Conf) MonIDs() []string {
	var ids []string
	for _, sec := range c.File.Sections() {
		if id, ok := strings.CutPrefix(sec, "mon."); ok && id != "" && c.monAddr(id) != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// monAddr is MON id's address: its section's public_addr ("" if none).
func (c *Conf) monAddr(id string) string { return c.For("mon." + id).String("public_addr") }

// monNamed is the id of the MON the configuration gives address addr
// ("" if none).
func (c *Conf) monNamed(addr string) string {
	for _, id := range c.MonIDs() {
		if c.monAddr(id) == addr {
			return id
		}
	}
	return ""
}

// monID is how a MON id may look: Ceph's mon names, without dots.
var monID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// AddMon adds MON id at addr to the cluster, as `ceph mon add`: the MONs
// take it as a non-voter, which votes once it has caught up. The
// configuration file gains its [mon.ID] section and its address in
// mon_host (and mon_initial_members, if unset, the MONs that formed the
// cluster, so the new one joins rather than forms a cluster). addr ""
// picks free ports on 127.0.0.1 (a local cluster). The MON itself is
// started afterwards: `shoal mon --id ID`, or `shoal up` for a local
// cluster.
func AddMon(ctx context.Context, c *Conf, conn *client.Conn, id, addr string, w io.Writer) error {
	if !monID.MatchString(id) {
		return fmt.Errorf("mon add: %q: a MON id is letters, digits, '-' and '_' (e.g. d)", id)
	}
	if have := c.monAddr(id); have != "" && addr != "" && have != addr {
		return fmt.Errorf("mon add: mon.%s has public_addr %s in %s, not %s", id, have, c.Path, addr)
	} else if have != "" {
		addr = have
	}
	if other := c.monNamed(addr); addr != "" && other != "" && other != id {
		return fmt.Errorf("mon add: %s is mon.%s's address in %s", addr, other, c.Path)
	}
	initial := monc.ParseMonHost(c.For("global").String("mon_initial_members"))
	if slices.Contains(initial, id) {
		return fmt.Errorf("mon add: mon.%s is one of mon_initial_members, which form a new cluster when they have no state: give the new MON another id", id)
	}
	if addr == "" {
		taken := map[int]bool{}
		for _, other := range c.MonIDs() {
			if _, p, err := splitPort(c.monAddr(other)); err == nil {
				taken[p], taken[p+1] = true, true
			}
		}
		ports, err := freePorts(1, taken)
		if err != nil {
			return fmt.Errorf("mon add: %w: give an address", err)
		}
		addr = "127.0.0.1:" + strconv.Itoa(ports[0])
	}
	if _, err := mon.RaftAddr(addr); err != nil {
		return fmt.Errorf("mon add: %w", err)
	}
	if len(initial) == 0 { // a configuration from before the option: its MONs formed the cluster
		hosts := c.MonAddrs()
		for _, other := range c.MonIDs() {
			if slices.Contains(hosts, c.monAddr(other)) {
				initial = append(initial, other)
			}
		}
		if err := editConf(c.Path, func(f *confText) { f.set("global", "mon_initial_members", strings.Join(initial, ",")) }); err != nil {
			return err
		}
	}
	r, err := conn.MonCommand(ctx, "mon add", map[string]string{"addr": addr})
	if err != nil {
		return err
	}
	hosts := c.MonAddrs()
	if !slices.Contains(hosts, addr) {
		hosts = append(hosts, addr)
	}
	err = editConf(c.Path, func(f *confText) {
		f.set("global", "mon_host", strings.Join(hosts, ","))
		f.set("mon."+id, "public_addr", addr)
	})
	if err != nil {
		return fmt.Errorf("mon.%s was added, but %w", id, err)
	}
	fmt.Fprintf(w, "%s\nmon.%s at %s is in %s; start it (shoal mon --id %s, or shoal up --data %s): it votes once it has caught up\n",
		r.Message, id, addr, c.Path, id, c.Dir)
	return nil
}

// RemoveMon removes MON id (or the MON at an address) from the cluster,
// as `ceph mon rm`; the MON stops by itself once it learns it. The
// configuration file loses its [mon.ID] section and its address in
// mon_host; its data directory is left as it is.
func RemoveMon(ctx context.Context, c *Conf, conn *client.Conn, id string, w io.Writer) error {
	addr := c.monAddr(id)
	if addr == "" {
		if _, _, err := splitPort(id); err != nil {
			return fmt.Errorf("mon rm: no [mon.%s] with a public_addr in %s (give its id or its address)", id, c.Path)
		}
		addr, id = id, c.monNamed(id)
	}
	r, err := conn.MonCommand(ctx, "mon rm", map[string]string{"addr": addr})
	if err != nil {
		return err
	}
	hosts := slices.DeleteFunc(c.MonAddrs(), func(a string) bool { return a == addr })
	err = editConf(c.Path, func(f *confText) {
		if len(hosts) > 0 {
			f.set("global", "mon_host", strings.Join(hosts, ","))
		}
		if id != "" {
			f.removeSection("mon." + id)
		}
	})
	if err != nil {
		return fmt.Errorf("the MON at %s was removed, but %w", addr, err)
	}
	fmt.Fprintf(w, "%s\nthe MON at %s stops once it learns it; its data directory is left in place\n", r.Message, addr)
	return nil
}

// MonDump prints the MON map: its epoch, then each MON's id (from the
// configuration, if it names it), address, and role.
func MonDump(ctx context.Context, c *Conf, conn *client.Conn, w io.Writer) error {
	r, err := conn.MonCommand(ctx, "mon dump", nil)
	if err != nil {
		return err
	}
	var mm monc.MonMap
	if err := json.Unmarshal(r.Data, &mm); err != nil {
		return fmt.Errorf("mon dump: bad reply: %w", err)
	}
	fmt.Fprintf(w, "epoch %d\n", mm.Epoch)
	for _, mi := range mm.Mons {
		role := "voter"
		if !mi.Voter {
			role = "non-voter (catching up)"
		}
		id := c.monNamed(mi.Addr)
		if id == "" {
			id = "?"
		}
		fmt.Fprintf(w, "mon.%s %s %s\n", id, mi.Addr, role)
	}
	return nil
}

func splitPort(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	p, perr := strconv.Atoi(port)
	if err != nil || perr != nil || host == "" {
		return "", 0, fmt.Errorf("%q: want host:port", addr)
	}
	return host, p, nil
}

// confText is a configuration file as lines, edited in place so its
// comments and order stay.
type confText struct{ lines []string }

// section is the index range [start, end) of section sec's lines (its
// header at start), or -1, -1.
func (f *confText) section(sec string) (int, int) {
	start := -1
	for i, l := range f.lines {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "[") {
			continue
		}
		if start >= 0 {
			return start, i
		}
		if strings.TrimSpace(strings.Trim(t, "[]")) == sec {
			start = i
		}
	}
	if start < 0 {
		return -1, -1
	}
	return start, len(f.lines)
}

// set sets option key in section sec (created at the end if missing),
// replacing its line if the section has one.
func (f *confText) set(sec, key, value string) {
	line := key + " = " + value
	start, end := f.section(sec)
	if start < 0 {
		if n := len(f.lines); n > 0 && strings.TrimSpace(f.lines[n-1]) != "" {
			f.lines = append(f.lines, "")
		}
		f.lines = append(f.lines, "["+sec+"]", line)
		return
	}
	for i := start + 1; i < end; i++ {
		k, _, ok := strings.Cut(f.lines[i], "=")
		if ok && config.Normalize(strings.TrimSpace(k)) == config.Normalize(key) {
			f.lines[i] = line
			return
		}
	}
	last := start // after the section's last setting, before its trailing blank lines
	for i := start + 1; i < end; i++ {
		if strings.TrimSpace(f.lines[i]) != "" {
			last = i
		}
	}
	f.lines = slices.Insert(f.lines, last+1, line)
}

// removeSection deletes section sec and its lines.
func (f *confText) removeSection(sec string) {
	if start, end := f.section(sec); start >= 0 {
		f.lines = slices.Delete(f.lines, start, end)
	}
}

// editConf rewrites the configuration file at path with edit applied,
// durably; the result must still parse.
func editConf(path string, edit func(*confText)) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	f := &confText{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		f.lines = append(f.lines, sc.Text())
	}
	edit(f)
	out := strings.Join(f.lines, "\n") + "\n"
	if _, err := config.Parse(strings.NewReader(out), path); err != nil {
		return fmt.Errorf("configuration %s after the change: %w", path, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if err := durable.WriteFile(path, []byte(out), st.Mode().Perm()); err != nil {
		return fmt.Errorf("configuration %s: %w", path, err)
	}
	return nil
}

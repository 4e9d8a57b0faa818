package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/shoal-project/shoal/gateway"
	"github.com/shoal-project/shoal/gateway/rgw"
)

// GatewayName is the entity name of the gateway `shoal up` runs; its
// [client.rgw.gateway] section of shoal.conf configures it.
const GatewayName = "client.rgw.gateway"

// Frontend is the gateway's listener (from rgw_frontends, or flags).
type Frontend struct {
	Addr     string
	CertFile string
	KeyFile  string
}

// ParseFrontends reads Ceph's rgw_frontends syntax: "beast
// endpoint=ADDR:PORT" or "beast ssl_endpoint=ADDR:PORT
// ssl_certificate=PATH ssl_private_key=PATH" (port=N means 0.0.0.0:N).
func ParseFrontends(v string) (Frontend, error) {
	var f Frontend
	fields := strings.Fields(v)
	if len(fields) == 0 || fields[0] != "beast" {
		return f, fmt.Errorf("rgw_frontends %q: want \"beast endpoint=ADDR:PORT ...\"", v)
	}
	for _, kv := range fields[1:] {
		k, val, _ := strings.Cut(kv, "=")
		switch k {
		case "endpoint":
			if f.Addr == "" {
				f.Addr = val
			}
		case "port":
			if f.Addr == "" {
				f.Addr = "0.0.0.0:" + val
			}
		case "ssl_endpoint":
			f.Addr = val
		case "ssl_port":
			f.Addr = "0.0.0.0:" + val
		case "ssl_certificate":
			f.CertFile = val
		case "ssl_private_key":
			f.KeyFile = val
		default:
			return f, fmt.Errorf("rgw_frontends %q: unknown option %q", v, k)
		}
	}
	if f.CertFile != "" && f.KeyFile == "" {
		f.KeyFile = f.CertFile // Ceph: the key may sit in the certificate file
	}
	if f.Addr == "" {
		return f, fmt.Errorf("rgw_frontends %q: no endpoint", v)
	}
	return f, nil
}

// RunGateway runs an S3 gateway with entity name's configuration,
// connecting to the cluster as clientName, until SIGINT or SIGTERM. fe
// overrides rgw_frontends when its Addr is set. An empty clientName is the
// gateway's own entity, name, as radosgw runs as client.rgw.ID — or, when
// name's keyring has no key for it (a cluster made before caps),
// client.admin.
func RunGateway(c *Conf, name, clientName string, fe Frontend) error {
	cfg := c.For(name)
	if fe.Addr == "" {
		var err error
		if fe, err = ParseFrontends(cfg.String("rgw_frontends")); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if clientName == "" {
		clientName = name
		if _, err := c.Keyring(name); err != nil {
			if _, serr := os.Stat(c.For(name).String("keyring")); serr == nil && c.For(name).String("keyring") != c.For("client.admin").String("keyring") {
				return fmt.Errorf("%s: %w", name, err) // its own keyring exists but does not serve: do not run as admin instead
			}
			clientName = "client.admin"
		}
	}
	d, err := startClientDaemon(c, name, clientName, 400)
	if err != nil {
		return err
	}
	defer d.close()
	log, conn := d.log, d.conn
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cctx, ccancel := context.WithTimeout(ctx, time.Minute)
	defer ccancel()
	opt := rgw.OptionsFromConfig(cfg)
	opt.Logger = log
	store, err := rgw.OpenStore(cctx, conn, opt)
	if err != nil {
		log.Error("start failed", "err", err)
		return fmt.Errorf("%s: %w", name, err)
	}
	ln, err := net.Listen("tcp", fe.Addr)
	if err != nil {
		return fmt.Errorf("%s: listen: %w", name, err)
	}
	if err := writePid(c, name); err != nil {
		ln.Close()
		return err
	}
	defer os.Remove(pidPath(c, name))
	log.Info("started", "addr", ln.Addr().String(), "tls", fe.CertFile != "", "entity", clientName)
	srv := gateway.NewServer(store)
	if addr := cfg.String("metrics_addr"); addr != "" {
		mln, err := net.Listen("tcp", addr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("%s: metrics: %w", name, err)
		}
		mdone := make(chan struct{})
		defer func() { cancel(); <-mdone }()
		go func() {
			defer close(mdone)
			if err := srv.ServeMetrics(ctx, mln); err != nil {
				log.Error("metrics server", "err", err)
			}
		}()
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, fe.CertFile, fe.KeyFile) }()
	select {
	case err := <-done:
		return fmt.Errorf("%s: %w", name, err)
	case <-signalCh():
	}
	log.Info("stopping")
	cancel()
	err = <-done
	fctx, fcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer fcancel()
	if ferr := store.Flush(fctx); ferr != nil {
		log.Warn("stopped with index completions in flight; `shoal bucket check --fix` finishes them", "err", ferr)
	}
	return err
}

package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/internal/durable"
)

// AdminUser is the S3 user `shoal up` creates for the operator.
const AdminUser = "admin"

// s3Env is what `shoal up` writes to DATA/s3.env.
type s3Env struct {
	Path      string
	Endpoint  string
	User      string
	AccessKey string
}

// startGateway starts the cluster's gateway unless it runs (creating its
// pools with min(3, osds) replicas, osds being the cluster's OSD count), makes sure
// the admin S3 user exists and writes DATA/s3.env (mode 0600) with the
// endpoint and the user's first key.
func startGateway(ctx context.Context, c *Conf, exe string, conn *client.Conn, osds int, started *[]string) (*s3Env, error) {
	cfg := c.For(GatewayName)
	fe, err := ParseFrontends(cfg.String("rgw_frontends"))
	if err != nil {
		return nil, fmt.Errorf("up: %w", err)
	}
	opt := rgw.OptionsFromConfig(cfg)
	opt.PoolSize = min(3, osds)
	store, err := rgw.OpenStore(ctx, conn, opt)
	if err != nil {
		return nil, fmt.Errorf("up: gateway pools: %w", err)
	}
	u, err := store.GetUser(ctx, AdminUser)
	if errors.Is(err, rgw.ErrNoSuchUser) {
		u, err = store.CreateUser(ctx, AdminUser, "Shoal admin", "", rgw.Key{})
	}
	if err != nil {
		return nil, fmt.Errorf("up: S3 user %s: %w", AdminUser, err)
	}
	if len(u.Keys) == 0 {
		if _, err := store.AddKey(ctx, AdminUser, rgw.Key{}); err != nil {
			return nil, fmt.Errorf("up: S3 user %s: %w", AdminUser, err)
		}
		if u, err = store.GetUser(ctx, AdminUser); err != nil {
			return nil, err
		}
	}
	if kr := cfg.String("keyring"); kr != c.For("client.admin").String("keyring") { // clusters made before caps: the gateway runs as client.admin
		if err := ensureEntity(ctx, conn, GatewayName, GatewayCaps, kr); err != nil {
			return nil, err
		}
	}
	if !running(c, GatewayName) {
		if err := spawn(c, exe, GatewayName, "gateway", "--conf", c.Path, "--id", strings.TrimPrefix(GatewayName, "client.rgw.")); err != nil {
			return nil, err
		}
		*started = append(*started, GatewayName)
	}
	scheme := "http"
	if fe.CertFile != "" {
		scheme = "https"
	}
	host := fe.Addr
	if h, p, err := net.SplitHostPort(fe.Addr); err == nil && (h == "0.0.0.0" || h == "" || h == "::") {
		host = net.JoinHostPort("127.0.0.1", p)
	}
	endpoint := scheme + "://" + host
	if err := waitHTTP(ctx, endpoint, fe.CertFile != ""); err != nil {
		return nil, fmt.Errorf("up: gateway did not answer at %s: %w (see %s)", endpoint, err, filepath.Join(c.Dir, "log", GatewayName+".log"))
	}
	env := &s3Env{Path: filepath.Join(c.Dir, "s3.env"), Endpoint: endpoint, User: u.ID, AccessKey: u.Keys[0].AccessKey}
	body := fmt.Sprintf("# written by `shoal up`: the S3 endpoint and the %s user's key\nS3_ENDPOINT=%s\nAWS_ENDPOINT_URL=%s\nAWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\nAWS_DEFAULT_REGION=default\n",
		u.ID, endpoint, endpoint, u.Keys[0].AccessKey, u.Keys[0].SecretKey)
	return env, durable.WriteFile(env.Path, []byte(body), 0o600)
}

// waitHTTP polls until something answers HTTP at endpoint.
func waitHTTP(ctx context.Context, endpoint string, useTLS bool) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	if useTLS {
		hc.Transport = insecureTransport()
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		resp, err := hc.Get(endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-t.C:
		}
	}
}

// insecureTransport skips certificate checks: only used to see whether
// the local gateway is listening, never to send data.
func insecureTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	return tr
}

package bench

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// s3Raw is the load generator's data path: one SigV4-signed net/http
// request per PUT or GET (UNSIGNED-PAYLOAD, as warp over HTTP), signed by
// the AWS SDK's signer. The SDK's client runs each request through some
// thirty middleware steps, which cost the generator as much CPU as a
// 64 KiB GET costs Shoal's gateway — CPU taken from the cluster under
// test on a shared machine — so setup and cleanup use the SDK and the
// measured operations use this.
type s3Raw struct {
	hc     *http.Client
	base   url.URL // the endpoint
	creds  aws.Credentials
	region string
	signer *v4.Signer
	sse    string // x-amz-server-side-encryption of PUTs ("": none)
}

func newS3Raw(hc *http.Client, base url.URL, ak, sk, region string) *s3Raw {
	return &s3Raw{hc: hc, base: base, region: region,
		creds:  aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk},
		signer: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })} // S3 signs the path as sent
}

// s3Error is an S3 error response.
type s3Error struct {
	Status  int
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

func (e *s3Error) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

// do sends one request; body, if not nil, returns a fresh reader of the
// request's n-byte body each time it is called (net/http calls it again
// to resend a request whose idle connection turned out closed).
func (c *s3Raw) do(ctx context.Context, method, bucket, key string, body func() io.Reader, n int64) (*http.Response, error) {
	u := c.base
	u.Path = u.Path + "/" + bucket + "/" + key
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if body != nil && c.sse != "" {
		req.Header.Set("X-Amz-Server-Side-Encryption", c.sse)
	}
	if body != nil {
		req.ContentLength = n
		req.Header.Set("Content-Length", strconv.FormatInt(n, 10))
		req.Body = http.NoBody
		if n > 0 {
			req.Body = io.NopCloser(body())
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body()), nil }
		}
	}
	const unsigned = "UNSIGNED-PAYLOAD"
	req.Header.Set("X-Amz-Content-Sha256", unsigned)
	if err := c.signer.SignHTTP(ctx, c.creds, req, unsigned, "s3", c.region, time.Now()); err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		e := &s3Error{Status: resp.StatusCode}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		xml.Unmarshal(b, e)
		return nil, e
	}
	return resp, nil
}

// put uploads an object of content want as bucket/key, generating its
// bytes as they are sent.
func (c *s3Raw) put(ctx context.Context, bucket, key string, want content) error {
	resp, err := c.do(ctx, http.MethodPut, bucket, key, want.reader, int64(want.size))
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// getVerify reads bucket/key and checks it against c as it arrives, in
// pieces of len(buf) bytes (each checked while still in the CPU's cache,
// instead of buffering the whole object and reading it back from memory).
// It returns the bytes read and the offset of the first wrong byte (-1 if
// the object is exactly c's content).
func (c *s3Raw) getVerify(ctx context.Context, bucket, key string, want content, buf []byte) (n, bad int, err error) {
	resp, err := c.do(ctx, http.MethodGet, bucket, key, nil, 0)
	if err != nil {
		return 0, -1, err
	}
	defer resp.Body.Close()
	bad = -1
	for {
		m, err := io.ReadFull(resp.Body, buf)
		if m > 0 && bad < 0 {
			bad = want.checkAt(n, buf[:m])
		}
		n += m
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return n, bad, err
		}
	}
	if bad < 0 && n < int(want.size) {
		bad = n
	}
	return n, bad, nil
}

// head stats bucket/key and returns its size.
func (c *s3Raw) head(ctx context.Context, bucket, key string) (int64, error) {
	resp, err := c.do(ctx, http.MethodHead, bucket, key, nil, 0)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.ContentLength, nil
}

// del deletes bucket/key.
func (c *s3Raw) del(ctx context.Context, bucket, key string) error {
	resp, err := c.do(ctx, http.MethodDelete, bucket, key, nil, 0)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

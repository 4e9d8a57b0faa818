package gateway

import (
	"crypto/md5"
	"hash"
	"sync"

	md5simd "github.com/minio/md5-simd"
)

// simdMD5Min is the smallest body (bytes) whose MD5 goes to the shared
// multi-lane hasher: below it, or of unknown length, crypto/md5 is
// cheaper (a lane's set-up and its hand-offs cost more than they save
// on a short stream; measured with 64 KiB to 4 MiB bodies).
const simdMD5Min = 8 << 20

// md5Lanes hashes many bodies at once: minio/md5-simd runs up to 16
// MD5 streams in one AVX-512 pass (8 with AVX2; crypto/md5 without
// either), so concurrent large uploads cost about half the CPU of
// hashing each alone (4 streams of 32 MiB, 1 core: 180 → 66–80 ms).
// One server per process, started on first use and living as long as
// the process, like crypto's own tables.
var md5Lanes = sync.OnceValue(md5simd.NewServer)

// newMD5 returns the hash for a body of size bytes (< 0: unknown); the
// caller Closes it when done.
func newMD5(size int64) md5simd.Hasher {
	if size >= simdMD5Min {
		return md5Lanes().NewHash()
	}
	return stdMD5{md5.New()}
}

type stdMD5 struct{ hash.Hash }

func (stdMD5) Close() {}

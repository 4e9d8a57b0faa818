package bench

import (
	"context"
	"encoding/json"
	"fmt"
)

// metadataVersion is the version of the metadata object's JSON document.
const metadataVersion = 1

// metadata is the content of the metadata object (RunName) a write
// --no-cleanup run leaves: a JSON document. obj_bencher.cc stores the
// object size, object count, pid and op size in Ceph's binary encoding and
// rebuilds the prefix from the reader's hostname; here the prefix is stored
// whole so that a reader on another host finds the objects.
type metadata struct {
	Version    int    `json:"version"`
	Prefix     string `json:"prefix"`
	Objects    int    `json:"num_objects"`
	ObjectSize int    `json:"object_size"`
	OpSize     int    `json:"op_size"`
	Hostname   string `json:"hostname"`
	PID        int    `json:"pid"`
}

func writeMetadata(ctx context.Context, t Target, runName string, m metadata) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("bench: encoding metadata: %w", err)
	}
	if err := t.WriteFull(ctx, runName, b); err != nil {
		return fmt.Errorf("bench: writing metadata object %q: %w", runName, err)
	}
	return nil
}

// readMetadata reads and checks the metadata object. A missing or empty
// object (obj_bencher.cc's fetch_bench_metadata treats both as ENOENT)
// gives an error wrapping ErrNoMetadata.
func readMetadata(ctx context.Context, t Target, runName string, isNotFound func(error) bool) (metadata, error) {
	var m metadata
	b, err := t.Read(ctx, runName, 0, 0)
	if err != nil && !isNotFound(err) {
		return m, fmt.Errorf("bench: reading metadata object %q: %w", runName, err)
	}
	if err != nil || len(b) == 0 {
		return m, fmt.Errorf("bench: %w (metadata object %q not found)", ErrNoMetadata, runName)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("bench: metadata object %q is not a bench metadata document: %w", runName, err)
	}
	if m.Version != metadataVersion || m.Prefix == "" || m.Objects < 0 || m.OpSize <= 0 || m.ObjectSize <= 0 {
		return m, fmt.Errorf("bench: metadata object %q: unsupported or invalid content %s", runName, b)
	}
	return m, nil
}

// Package golden reads and writes the golden wire samples in
// events/testdata/golden: one Kafka record per event type and version, as the
// project first wrote it. Samples are written once, by `go run
// ./events/internal/golden/cmd/gen`, which never overwrites a file, and must
// decode forever.
package golden

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Sample is one record as stored in a golden file.
type Sample struct {
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Timestamp time.Time `json:"timestamp"`
	Key       string    `json:"key"`
	Headers   []Header  `json:"headers"`
	// Value is the record value as text (JSON data in binary mode, a JSON
	// CloudEvent in structured mode).
	Value string `json:"value"`
}

// Header is one record header.
type Header struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Record returns the sample as a record.
func (s Sample) Record() *kgo.Record {
	r := &kgo.Record{Topic: s.Topic, Partition: s.Partition, Offset: s.Offset, Timestamp: s.Timestamp,
		Key: []byte(s.Key), Value: []byte(s.Value)}
	for _, h := range s.Headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	return r
}

// FromRecord returns the sample form of r.
func FromRecord(r *kgo.Record) Sample {
	s := Sample{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UTC(),
		Key: string(r.Key), Value: string(r.Value)}
	for _, h := range r.Headers {
		s.Headers = append(s.Headers, Header{Key: h.Key, Value: string(h.Value)})
	}
	return s
}

// Read loads a golden file.
func Read(path string) (Sample, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Sample{}, err
	}
	var s Sample
	if err := json.Unmarshal(b, &s); err != nil {
		return Sample{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Keys of the golden samples. They are test keys derived from fixed seeds;
// their public halves are also committed in testdata/golden/keys.json, which
// is what readers of the samples trust.
var (
	HubKey     = ed25519.NewKeyFromSeed(seed("argosy golden hub signing key"))
	ClusterKey = ed25519.NewKeyFromSeed(seed("argosy golden cluster signing key"))
	// NextClusterKey is the key ClusterKey rotates to in the key.rotated sample.
	NextClusterKey = ed25519.NewKeyFromSeed(seed("argosy golden next cluster signing key"))
)

// CompactDir is the directory, within the golden samples', of the samples
// in the compact signature form (events.SigCompact); the samples beside it
// are in the DSSE form that came first.
const CompactDir = "sig1"

// SampleLogTime is the broker log time of every sample.
var SampleLogTime = time.Date(2026, 11, 21, 12, 0, 1, 0, time.UTC)

// Names used by the samples.
const (
	HubName     = "golden-hub"
	ClusterName = "golden-cluster"
)

func seed(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// KeyFile is the content of keys.json.
type KeyFile struct {
	Keys []KeyEntry `json:"keys"`
}

// KeyEntry is one public key of keys.json.
type KeyEntry struct {
	ID        string `json:"id"`
	Owner     string `json:"owner"`
	Role      string `json:"role"`
	PublicKey []byte `json:"publicKey"`
}

// Retarget makes a sample's decoded data speak of cluster: its cluster
// member, and each delta's in a batch of status deltas.
func Retarget(data map[string]any, cluster string) {
	if _, ok := data["cluster"]; ok {
		data["cluster"] = cluster
	}
	if ds, ok := data["deltas"].([]any); ok {
		for _, d := range ds {
			if m, ok := d.(map[string]any); ok {
				m["cluster"] = cluster
			}
		}
	}
}

package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
)

// statusDeltas returns n status deltas of cluster c, as a spoke sends
// them: one Application's sync and health moving on, over ten
// Applications named ingest-00…09 that no simulated cluster holds.
func statusDeltas(c string, n int) ([]*event.Event, error) {
	out := make([]*event.Event, 0, n)
	src := "//argosy.dev/spoke/" + c
	for i := range n {
		name := fmt.Sprintf("ingest-%02d", i%10)
		seq := int64(i/10 + 1)
		health := "Healthy"
		if seq%2 == 0 {
			health = "Progressing"
		}
		e, err := events.New(src, events.TypeApplicationStatus,
			events.Subject{Cluster: c, Kind: "applications", Namespace: "argocd", Name: name}.String(), c,
			schemas.ApplicationStatusChanged{Resource: schemas.Resource{Cluster: c, Namespace: "argocd", Name: name, Generation: 1},
				Seq: seq, Full: seq == 1, Sync: &schemas.SyncStatus{Status: "Synced", Revision: fmt.Sprintf("%040x", seq)},
				Health: &schemas.HealthStatus{Status: health}})
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// fullApplication is an Argo CD Application as `kubectl get -o json`
// returns it from Argo CD v2.14 for a synced, healthy app of five
// resources with a full deployment history (ten entries) and its last
// operation, managed fields left out: what a status stream that sends the
// whole object would send for every change.
//
//go:embed testdata/application.json
var fullApplication []byte

// wireResult is the bytes a status change takes on the wire with one
// codec: record batches as the broker stores and serves them (batch
// header, records with key, value and headers, compressed).
type wireResult struct {
	Codec   string
	Alone   float64 // bytes per delta, each in a batch of its own
	Batched float64 // bytes per delta, a cluster's deltas five to a batch
	Full    float64 // the whole Application, alone
}

// wireSample is what the measurement found of the deltas themselves.
type wireSample struct {
	Records int
	Value   float64            // mean value (data) bytes
	Key     float64            // mean key bytes
	Headers map[string]float64 // mean bytes of each header, name and value
	FullApp int                // the whole Application's JSON bytes
}

var codecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
	{"zstd-fastest", kgo.ZstdCompression().WithLevel(1)},
}

// producerCodec is the codec of events.Compressor.
const producerCodec = "zstd-fastest"

// measureWire reads up to limit real status deltas from the status topic
// (sent by the simulated fleet's agents), appends them again to scratch
// topics with each codec, alone and five of one cluster to a batch, and
// reads the stored sizes back from the broker.
func measureWire(ctx context.Context, brokers string, adm *kadm.Client, prefix, status string, limit int) ([]wireResult, *wireSample, error) {
	sample, err := readDeltas(ctx, brokers, status, limit)
	if err != nil {
		return nil, nil, err
	}
	if len(sample) < 50 {
		return nil, nil, fmt.Errorf("only %d status deltas to measure", len(sample))
	}
	var app bytes.Buffer // as an API server sends it: compact
	if err := json.Compact(&app, fullApplication); err != nil {
		return nil, nil, err
	}
	ws := &wireSample{Records: len(sample), Headers: map[string]float64{}, FullApp: app.Len()}
	for _, r := range sample {
		ws.Value += float64(len(r.Value)) / float64(len(sample))
		ws.Key += float64(len(r.Key)) / float64(len(sample))
		for _, h := range r.Headers {
			ws.Headers[h.Key] += float64(len(h.Key)+len(h.Value)) / float64(len(sample))
		}
	}
	fives := batchesOfFive(sample)
	var out []wireResult
	for _, c := range codecs {
		res := wireResult{Codec: c.name}
		alone := batchesOfOne(sample)
		full := make([][]*kgo.Record, 20)
		for i := range full {
			full[i] = []*kgo.Record{{Key: []byte("cluster"), Value: app.Bytes()}}
		}
		for _, m := range []struct {
			batches [][]*kgo.Record
			into    *float64
			name    string
		}{{alone, &res.Alone, "alone"}, {fives, &res.Batched, "batched"}, {full, &res.Full, "full"}} {
			if len(m.batches) == 0 {
				continue
			}
			topic := fmt.Sprintf("%swire-%s-%s", prefix, c.name, m.name)
			if *m.into, err = storedPerRecord(ctx, brokers, adm, topic, c.codec, m.batches); err != nil {
				return nil, nil, err
			}
		}
		out = append(out, res)
	}
	return out, ws, nil
}

// batchesOfFive returns sample's deltas five of one cluster to a batch, in
// their order; a cluster's last few that make no five are left out.
func batchesOfFive(sample []*kgo.Record) [][]*kgo.Record {
	byKey := map[string][]*kgo.Record{}
	for _, r := range sample {
		byKey[string(r.Key)] = append(byKey[string(r.Key)], r)
	}
	var fives [][]*kgo.Record
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		rs := byKey[k]
		for i := 0; i+5 <= len(rs); i += 5 {
			fives = append(fives, rs[i:i+5])
		}
	}
	return fives
}

// batchesOfOne returns each of sample's deltas in a batch of its own.
func batchesOfOne(sample []*kgo.Record) [][]*kgo.Record {
	alone := make([][]*kgo.Record, len(sample))
	for i, r := range sample {
		alone[i] = []*kgo.Record{r}
	}
	return alone
}

// readDeltas reads up to limit application status deltas from the start
// of topic.
func readDeltas(ctx context.Context, brokers, topic string, limit int) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(brokers)...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < limit && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if len(out) < limit && header(r, "ce_type") == events.TypeApplicationStatus {
				out = append(out, &kgo.Record{Key: r.Key, Value: r.Value, Headers: r.Headers})
			}
		})
	}
	return out, nil
}

// storedPerRecord appends the batches to a new one-partition topic with
// codec, one produce request per batch, and returns the bytes the broker
// stores per record.
func storedPerRecord(ctx context.Context, brokers string, adm *kadm.Client, topic string, codec kgo.CompressionCodec, batches [][]*kgo.Record) (float64, error) {
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": kadm.StringPtr("LogAppendTime")}, topic); err != nil {
		return 0, err
	}
	defer func() {
		if _, err := adm.DeleteTopics(context.WithoutCancel(ctx), topic); err != nil {
			fmt.Printf("delete %s: %v\n", topic, err)
		}
	}()
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		return 0, err
	}
	cl, err := kgo.NewClient(append(events.ProducerOpts(nil), kgo.SeedBrokers(seeds(brokers)...), kgo.DefaultProduceTopic(topic),
		kgo.WithCompressor(comp), kgo.ProducerBatchCompression(codec), kgo.ManualFlushing())...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	records := 0
	for _, b := range batches {
		results := make(chan error, len(b))
		for _, r := range b {
			cl.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value, Headers: r.Headers}, func(_ *kgo.Record, err error) { results <- err })
		}
		if err := cl.Flush(ctx); err != nil {
			return 0, err
		}
		for range b {
			if err := <-results; err != nil {
				return 0, err
			}
		}
		records += len(b)
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		return 0, err
	}
	var size int64 = -1
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic {
				size = max(size, p.Size)
			}
		})
	})
	if size <= 0 {
		return 0, errors.New(topic + ": no stored size")
	}
	return float64(size) / float64(records), nil
}

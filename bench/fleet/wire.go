package main

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// statusDeltas returns n status deltas of cluster c, as a spoke sends
// them: one Application's sync and health moving on, over ten
// Applications named ingest-00…09 that no simulated cluster holds; per
// deltas to an event, as a spoke sends a window's changes (alone, as
// application.changed, when per is 1).
func statusDeltas(c string, n, per int) ([]*event.Event, error) {
	deltas := make([]schemas.ApplicationStatusChanged, n)
	for i := range deltas {
		name := fmt.Sprintf("ingest-%02d", i%10)
		seq := int64(i/10 + 1)
		health := "Healthy"
		if seq%2 == 0 {
			health = "Progressing"
		}
		deltas[i] = schemas.ApplicationStatusChanged{Resource: schemas.Resource{Cluster: c, Namespace: "argocd", Name: name, Generation: 1},
			Seq: seq, Full: seq == 1, Sync: &schemas.SyncStatus{Status: "Synced", Revision: fmt.Sprintf("%040x", seq)},
			Health: &schemas.HealthStatus{Status: health}}
	}
	src := "//argosy.dev/spoke/" + c
	out := make([]*event.Event, 0, (n+per-1)/per)
	for chunk := range slices.Chunk(deltas, max(per, 1)) {
		var e *event.Event
		var err error
		if len(chunk) == 1 {
			e, err = events.New(src, events.TypeApplicationStatus,
				events.Subject{Cluster: c, Kind: "applications", Namespace: "argocd", Name: chunk[0].Name}.String(), c, chunk[0])
		} else {
			e, err = events.New(src, events.TypeApplicationStatusBatch, events.Subject{Cluster: c}.String(), c,
				schemas.ApplicationStatusBatch{Cluster: c, Deltas: chunk})
		}
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
	Batched float64 // bytes per delta, five of one cluster in each batch event
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
// (sent by the simulated fleet's agents, alone or in batches), signs them
// again as agents do, appends them to scratch topics with each codec,
// alone and five of one cluster to a batch event, and reads the stored
// sizes back from the broker.
func measureWire(ctx context.Context, brokers string, adm *kadm.Client, prefix, status string, limit int) ([]wireResult, *wireSample, error) {
	deltas, err := readDeltas(ctx, brokers, status, limit)
	if err != nil {
		return nil, nil, err
	}
	if len(deltas) < 50 {
		return nil, nil, fmt.Errorf("only %d status deltas to measure", len(deltas))
	}
	alone, fives, err := signedRecords(ctx, deltas, events.SigCompact)
	if err != nil {
		return nil, nil, err
	}
	var app bytes.Buffer // as an API server sends it: compact
	if err := json.Compact(&app, fullApplication); err != nil {
		return nil, nil, err
	}
	ws := &wireSample{Records: len(alone), Headers: map[string]float64{}, FullApp: app.Len()}
	for _, r := range alone {
		ws.Value += float64(len(r.Value)) / float64(len(alone))
		ws.Key += float64(len(r.Key)) / float64(len(alone))
		for _, h := range r.Headers {
			ws.Headers[h.Key] += float64(len(h.Key)+len(h.Value)) / float64(len(alone))
		}
	}
	var out []wireResult
	for _, c := range codecs {
		res := wireResult{Codec: c.name}
		full := make([]*kgo.Record, 20)
		for i := range full {
			full[i] = &kgo.Record{Key: []byte("cluster"), Value: app.Bytes()}
		}
		for _, m := range []struct {
			records []*kgo.Record
			deltas  float64 // in each record
			into    *float64
			name    string
		}{{alone, 1, &res.Alone, "alone"}, {fives, 5, &res.Batched, "batched"}, {full, 1, &res.Full, "full"}} {
			if len(m.records) == 0 {
				continue
			}
			topic := fmt.Sprintf("%swire-%s-%s", prefix, c.name, m.name)
			perRecord, err := storedPerRecord(ctx, brokers, adm, topic, c.codec, batchesOfOne(m.records))
			if err != nil {
				return nil, nil, err
			}
			*m.into = perRecord / m.deltas
		}
		out = append(out, res)
	}
	return out, ws, nil
}

// agentDelta is one delta an agent sent, with the trust offset it signed
// beside it ("" for none).
type agentDelta struct {
	cluster string
	trust   string
	delta   schemas.ApplicationStatusChanged
}

// signedRecords returns deltas as agents send them, signed in form with a
// new key of each cluster: each alone in an application.changed record,
// and five of one cluster in each applications.changed record, in their
// order (a cluster's last few that make no five are left out of those).
func signedRecords(ctx context.Context, deltas []agentDelta, form events.SigForm) (alone, fives []*kgo.Record, err error) {
	byCluster := map[string][]agentDelta{}
	for _, d := range deltas {
		byCluster[d.cluster] = append(byCluster[d.cluster], d)
	}
	for _, c := range slices.Sorted(maps.Keys(byCluster)) {
		ds := byCluster[c]
		signer, err := events.GenerateSigner()
		if err != nil {
			return nil, nil, err
		}
		if read, err := strconv.ParseInt(ds[0].trust, 10, 64); err == nil {
			signer = signer.WithTrustOffset(func() (int64, bool) { return read, true })
		}
		record := func(typ, subject string, data any) error {
			e, err := events.New(spoke.Source(c), typ, subject, c, data)
			if err == nil && form == events.SigDSSE {
				e.SetDataSchema(schemas.URL(typ)) // as the producer writes it for older readers
			}
			if err == nil {
				err = signer.SignAs(ctx, e, form)
			}
			var r *kgo.Record
			if err == nil {
				r, err = events.EventRecord(ctx, e)
			}
			if err != nil {
				return err
			}
			if typ == events.TypeApplicationStatus {
				alone = append(alone, r)
			} else {
				fives = append(fives, r)
			}
			return nil
		}
		for _, d := range ds {
			subj := events.Subject{Cluster: c, Kind: schemas.SubjectApplications, Namespace: d.delta.Namespace, Name: d.delta.Name}
			if err := record(events.TypeApplicationStatus, subj.String(), d.delta); err != nil {
				return nil, nil, err
			}
		}
		for i := 0; i+5 <= len(ds); i += 5 {
			b := schemas.ApplicationStatusBatch{Cluster: c}
			for _, d := range ds[i : i+5] {
				b.Deltas = append(b.Deltas, d.delta)
			}
			if err := record(events.TypeApplicationStatusBatch, events.Subject{Cluster: c}.String(), b); err != nil {
				return nil, nil, err
			}
		}
	}
	return alone, fives, nil
}

// batchesOfOne returns each record in a batch of its own.
func batchesOfOne(records []*kgo.Record) [][]*kgo.Record {
	alone := make([][]*kgo.Record, len(records))
	for i, r := range records {
		alone[i] = []*kgo.Record{r}
	}
	return alone
}

// readDeltas reads up to limit application status deltas, alone or in
// batches, from the start of topic.
func readDeltas(ctx context.Context, brokers, topic string, limit int) ([]agentDelta, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(brokers)...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out []agentDelta
	var bad error
	for len(out) < limit && ctx.Err() == nil && bad == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			var b schemas.ApplicationStatusBatch
			switch header(r, "ce_type") {
			case events.TypeApplicationStatus:
				b.Deltas = make([]schemas.ApplicationStatusChanged, 1)
				bad = cmp.Or(bad, json.Unmarshal(r.Value, &b.Deltas[0]))
			case events.TypeApplicationStatusBatch:
				bad = cmp.Or(bad, json.Unmarshal(r.Value, &b))
			}
			for _, d := range b.Deltas {
				if len(out) < limit {
					out = append(out, agentDelta{cluster: string(r.Key), trust: header(r, "ce_trustoffset"), delta: d})
				}
			}
		})
	}
	return out, bad
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

//go:build integration

package kafkatest_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// TestBrokerStopStartKeepsData stops a broker, checks that nothing listens
// on its port any more, starts it again on the same port and reads back
// what was written before.
func TestBrokerStopStartKeepsData(t *testing.T) {
	b := kafkatest.StartBroker(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	topic := kafkatest.Prefix(t) + "kept"
	if _, err := kadm.NewClient(b.Client(t)).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := b.Client(t, kgo.DefaultProduceTopic(topic))
	if err := prod.ProduceSync(ctx, kgo.StringRecord("before")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod.Close()

	addr := b.Addr
	stopping := time.Now()
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %s", time.Since(stopping).Round(time.Millisecond))
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Stop", addr)
	}
	starting := time.Now()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("started again in %s", time.Since(starting).Round(time.Millisecond))
	if b.Addr != addr {
		t.Fatalf("Addr = %s after Start, was %s", b.Addr, addr)
	}

	cons := b.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := cons.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	var got []string
	fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if len(got) != 1 || got[0] != "before" {
		t.Fatalf("read %q after the restart, want [before]", got)
	}
	if err := b.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
}

package telemetry

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel"
)

// TestMetricsEndpoint serves /metrics and checks that OpenTelemetry and
// franz-go metrics both reach it. kfake stands in for a broker: this is a
// test of wiring, not of Kafka.
func TestMetricsEndpoint(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tel, err := Setup(ctx, "argosy-test", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	c, err := otel.Meter("test").Int64Counter("argosy.test.count")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(ctx, 3)

	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	cl, err := kgo.NewClient(append(tel.KafkaOpts("test"), kgo.SeedBrokers(fake.ListenAddrs()...))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, addr, tel.Handler()) }()
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		body = string(b)
		break
	}
	for _, want := range []string{`argosy_test_count_total{otel_scope_name="test",otel_scope_schema_url="",otel_scope_version=""} 3`, `argosy_kafka_produce_bytes_total{client="test"`, "go_goroutines"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

//go:build integration

package events_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// TestPartitionMatchesJavaClient checks that PartitionOf computes, for every
// key, the partition Apache Kafka's own Java producer computes.
func TestPartitionMatchesJavaClient(t *testing.T) {
	keys := []string{"a", "cluster-a", "prod-eu-west-1", "staging-042", "x" + strings.Repeat("y", 63), "ünïcode", "0"}
	for i := range 50 {
		keys = append(keys, fmt.Sprintf("cluster-%03d", i))
	}
	pt := events.NewPartitioner(nil)
	for _, n := range []int32{1, 7, 64, 1000} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd, err := kafkatest.JavaCommand(ctx, append([]string{"testdata/java/PartitionFor.java", strconv.Itoa(int(n))}, keys...)...)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("java: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != len(keys) {
			t.Fatalf("java printed %d lines for %d keys:\n%s", len(lines), len(keys), out)
		}
		for i, line := range lines {
			k, p, _ := strings.Cut(line, " ")
			want, err := strconv.Atoi(p)
			if err != nil || k != keys[i] {
				t.Fatalf("bad java output line %q", line)
			}
			if got := pt.PartitionOf(keys[i], n); got != int32(want) {
				t.Errorf("PartitionOf(%q, %d) = %d, Java client says %d", keys[i], n, got, want)
			}
		}
	}
}

// TestConsoleConsumerReadsEvents checks that a plain Kafka tool, Kafka's own
// console consumer, reads what the project writes and shows the ce_ headers.
func TestConsoleConsumerReadsEvents(t *testing.T) {
	r := newRig(t, 1, nil)
	e := heartbeat(t, "cluster-a")
	r.publish("cluster-a", e)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, err := kafkatest.JavaCommand(ctx, "org.apache.kafka.tools.consumer.ConsoleConsumer",
		"--bootstrap-server", kafkatest.Bootstrap(t), "--topic", r.topics[events.TopicStatus],
		"--from-beginning", "--max-messages", "1", "--timeout-ms", "60000",
		"--property", "print.headers=true", "--property", "print.key=true")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("console consumer: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"ce_specversion:1.0", "ce_type:" + events.TypeHeartbeat, "ce_id:" + e.ID(),
		"ce_subject:clusters/cluster-a", "content-type:application/json", "ce_sig:",
		"cluster-a", `"agentVersion":"test"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("console consumer output lacks %q:\n%s", want, out)
		}
	}
}

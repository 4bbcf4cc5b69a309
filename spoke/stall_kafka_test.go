//go:build integration

package spoke_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// appIn is generation 1 of Application name in namespace ns.
func (w *world) appIn(ns, name string) *event.Event {
	spec, _ := json.Marshal(map[string]any{"project": "default",
		"source":      map[string]any{"repoURL": w.repo.URL, "path": "app", "targetRevision": "main"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": w.ns}})
	res := schemas.Resource{Cluster: w.cluster, Namespace: ns, Name: name, Generation: 1}
	return w.event(events.TypeApplicationUpserted, res, schemas.ApplicationUpserted{Resource: res, Project: "default", Spec: spec})
}

// operation is a request to run op on Application name; a rollback goes
// to history entry historyID, which other operations do not carry.
func (w *world) operation(name, op string, historyID int64) *event.Event {
	res := schemas.Resource{Cluster: w.cluster, Namespace: kubetest.ArgoNamespace, Name: name, Generation: 1}
	p := schemas.OperationRequested{Resource: res, RequestID: fmt.Sprintf("req-%s-%s-%d", name, op, time.Now().UnixNano()), Operation: op}
	if op == schemas.OperationRollback {
		p.HistoryID = &historyID
	}
	return w.event(events.TypeOperationRequested, res, p)
}

// applyAllWithin publishes es with the hub's key and waits, at most within,
// for every one to be acknowledged; it returns the acknowledgements.
func (w *world) applyAllWithin(within time.Duration, es ...*event.Event) map[string]string {
	w.t.Helper()
	ctx, cancel := context.WithCancel(w.t.Context())
	defer cancel()
	done := w.run(ctx, "spoke."+w.cluster)
	start := time.Now()
	w.publish(w.hub, es...)
	got := w.acks(func(m map[string]string, _ int) bool {
		for _, e := range es {
			if m[e.ID()] == "" {
				return false
			}
		}
		return true
	})
	if took := time.Since(start); took > within {
		w.t.Errorf("the events were acknowledged in %s, want within %s: a bad event held up the partition", took, within)
	}
	cancel()
	if err := <-done; err != nil {
		w.t.Fatal(err)
	}
	return got
}

// TestPartitionNeverStallsOnARefusedApply sends, on one cluster's
// partition, events that the real API server and Argo CD refuse however
// often they are tried: a rollback to a history entry that does not exist,
// a sync of a missing Application, and an Application in a namespace that
// does not exist. Each is rejected as apply_failed with the server's
// reason, and the good event after them is applied within seconds.
func TestPartitionNeverStallsOnARefusedApply(t *testing.T) {
	w := newWorld(t)
	w.repo.Commit(t, "v1", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: one\n"})
	name := "guestbook-" + w.ns
	w.applyAllWithin(time.Minute, w.app(1))
	rollback := w.operation(name, schemas.OperationRollback, 99)
	ghost := w.operation("ghost-"+w.ns, schemas.OperationSync, 0)
	nowhere := w.appIn("nowhere-"+w.ns, "lost-"+w.ns)
	good := w.appIn(kubetest.ArgoNamespace, "after-"+w.ns)
	got := w.applyAllWithin(30*time.Second, rollback, ghost, nowhere, good)
	for _, e := range []*event.Event{rollback, ghost, nowhere} {
		if got[e.ID()] != schemas.RejectApplyFailed {
			t.Errorf("%s acknowledged %q, want %q", e.ID(), got[e.ID()], schemas.RejectApplyFailed)
		}
	}
	if got[good.ID()] != "applied" {
		t.Errorf("the event after the refused ones: %q, want applied", got[good.ID()])
	}
	for id, want := range map[string]string{rollback.ID(): "no history entry 99", ghost.ID(): "not found", nowhere.ID(): "not found"} {
		if r := w.reason(id); !strings.Contains(r, want) {
			t.Errorf("rejection of %s says %q, want it to name %q", id, r, want)
		}
	}
}

// TestPartitionNeverStallsOnForbidden runs the applier with credentials
// that may not write where an event asks: the API server forbids it, the
// event is rejected at once, and the next one is applied.
func TestPartitionNeverStallsOnForbidden(t *testing.T) {
	w := newWorld(t)
	cfg := kubetest.Current(t).ServiceAccount(t, kubetest.ArgoNamespace, "narrow-"+w.ns, []rbacv1.PolicyRule{
		{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		// An Application's AppProject is read before it is applied.
		{APIGroups: []string{"argoproj.io"}, Resources: []string{"appprojects"}, Verbs: []string{"get"}}})
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.argo = newArgo(t, dyn)
	forbidden := w.appIn("default", "elsewhere-"+w.ns)
	good := w.appIn(kubetest.ArgoNamespace, "allowed-"+w.ns)
	got := w.applyAllWithin(30*time.Second, forbidden, good)
	if got[forbidden.ID()] != schemas.RejectApplyFailed || !strings.Contains(w.reason(forbidden.ID()), "forbidden") {
		t.Errorf("forbidden event: %q (%s), want %q naming forbidden", got[forbidden.ID()], w.reason(forbidden.ID()), schemas.RejectApplyFailed)
	}
	if got[good.ID()] != "applied" {
		t.Errorf("the event after the forbidden one: %q, want applied", got[good.ID()])
	}
}

// reason is the reason of the rejection of event id on the status topic.
func (w *world) reason(id string) string {
	w.t.Helper()
	var reason string
	cl := kafkatest.Client(w.t, kgo.ConsumeTopics(w.topics[events.TopicStatus]), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	end := endOf(w.t, w.topics[events.TopicStatus])
	ctx, cancel := context.WithTimeout(w.t.Context(), time.Minute)
	defer cancel()
	for read := int64(0); read < end && ctx.Err() == nil; {
		for _, rec := range cl.PollFetches(ctx).Records() {
			read++
			var r schemas.ConfigRejected
			if header(rec, "ce_type") == events.TypeConfigRejected && json.Unmarshal(rec.Value, &r) == nil && r.EventID == id {
				reason = r.Reason
			}
		}
	}
	return reason
}

// endOf is the number of records on topic, all partitions together.
func endOf(t testing.TB, topic string) int64 {
	t.Helper()
	ends, err := kadm.NewClient(kafkatest.Client(t)).ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

// TestBootstrapPassesARefusedObject bootstraps a new spoke from a snapshot
// that holds an object the API server refuses (an Application in a
// namespace that does not exist) between two good ones. The bootstrap
// must not wait on it: the good ones are applied, the refused one is
// acknowledged as rejected and dead-lettered, and the bootstrap ends.
func TestBootstrapPassesARefusedObject(t *testing.T) {
	w := newWorld(t)
	writer, err := events.NewConfigWriter(kafkatest.Client(t, append(events.ProducerOpts(nil),
		kgo.TransactionalID("hub-"+w.ns))...), w.hubKey, w.topics)
	if err != nil {
		t.Fatal(err)
	}
	before, refused, after := w.appIn(kubetest.ArgoNamespace, "before-"+w.ns), w.appIn("nowhere-"+w.ns, "lost-"+w.ns),
		w.appIn(kubetest.ArgoNamespace, "after-"+w.ns)
	for _, e := range []*event.Event{before, refused, after} {
		if _, err := writer.Write(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	dec, err := events.NewDecoder(events.NewVerifier(w.reg), events.WithTarget(w.cluster), events.WithTopics(w.topics))
	if err != nil {
		t.Fatal(err)
	}
	part := events.NewPartitioner(nil).PartitionOf(w.cluster, partitions)
	boot, err := spoke.NewBootstrap(w.cluster, kafkatest.Client(t), []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, part,
		"spoke."+w.cluster, w.intake(dec), w.state, w.newApplier().Handle, spoke.WithTopics(w.topics))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := boot.Run(ctx); err != nil {
		t.Fatalf("bootstrap: %v (a refused object must not hold it up)", err)
	}
	got := w.acks(func(m map[string]string, _ int) bool { return len(m) >= 3 })
	want := map[string]string{before.ID(): "applied", refused.ID(): schemas.RejectApplyFailed, after.ID(): "applied"}
	for id, code := range want {
		if got[id] != code {
			t.Errorf("event %s acknowledged %q, want %q", id, got[id], code)
		}
	}
	if n := endOf(t, w.topics[events.TopicDeadLetter]); n != 1 {
		t.Errorf("%d dead letters, want the refused object's", n)
	}
}

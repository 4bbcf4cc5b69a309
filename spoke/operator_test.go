package spoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/sim"
	"github.com/argosyproj/argosy/spoke"
)

// outbox is a Publisher that keeps what it is given, and refuses the
// events of type fail, while it is set, as a broker that is away would.
type outbox struct {
	mu   sync.Mutex
	out  []string // "applied <event id>", "<code> <event id>", "completed:<phase> <event id>"
	fail string
}

func (o *outbox) failing(typ string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fail = typ
}

func (o *outbox) Publish(_ context.Context, es ...*event.Event) ([]*kgo.Record, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range es {
		if e.Type() == o.fail {
			return nil, errors.New("kafka: the broker is away")
		}
	}
	for _, e := range es {
		switch e.Type() {
		case events.TypeConfigApplied:
			var p schemas.ConfigApplied
			_ = json.Unmarshal(e.Data(), &p)
			o.out = append(o.out, "applied "+p.EventID)
		case events.TypeConfigRejected:
			var p schemas.ConfigRejected
			_ = json.Unmarshal(e.Data(), &p)
			o.out = append(o.out, p.Code+" "+p.EventID)
		case events.TypeOperationCompleted:
			var p schemas.OperationCompleted
			_ = json.Unmarshal(e.Data(), &p)
			o.out = append(o.out, "completed:"+p.Phase+" "+p.EventID)
		}
	}
	return nil, nil
}

func (o *outbox) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.out...)
}

// syncEvent is a decoded sync request of guestbook at offset, signed now.
func syncEvent(t *testing.T, offset int64) *events.Decoded {
	t.Helper()
	res := schemas.Resource{Cluster: "c1", Namespace: "argocd", Name: "guestbook", Generation: 1}
	p := &schemas.OperationRequested{Resource: res, RequestID: fmt.Sprintf("req-%d", offset), Operation: schemas.OperationSync}
	e, err := events.New("//argosy.dev/hub/test", events.TypeOperationRequested,
		events.Subject{Cluster: "c1", Kind: schemas.SubjectApplications, Namespace: "argocd", Name: "guestbook"}.String(), "c1", p)
	if err != nil {
		t.Fatal(err)
	}
	return &events.Decoded{Event: e, Data: p, LogTime: time.Now(), Partition: 0, Offset: offset}
}

// TestOperatorWaitsForArgoCD holds the policy with a simulated Argo CD
// whose operations end only when the test steps it: a sync someone made in
// the cluster runs, three syncs are asked for; none starts until that one
// ended, then each starts only after the one before it ended, each is
// acknowledged applied when it starts and completed when it ends, and one
// whose expiry passes while it waits is rejected as stale at once, never
// started.
func TestOperatorWaitsForArgoCD(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := sim.NewCluster(sim.WithBehaviour(sim.Behaviour{SyncTime: [2]time.Duration{time.Hour, time.Hour},
			HealthTime: [2]time.Duration{time.Second, time.Second}, RecoverTime: [2]time.Duration{time.Minute, time.Minute}}), sim.WithSeed(1))
		ref := spoke.Ref{Kind: spoke.KindApplication, Namespace: "argocd", Name: "guestbook"}
		if err := c.Apply(t.Context(), &spoke.Object{Ref: ref, Spec: json.RawMessage(`{"project":"default","destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}`),
			Generation: 1}); err != nil {
			t.Fatal(err)
		}
		c.Step(time.Now().Add(2*time.Hour), time.Second) // the first sync of a new Application ends
		if err := c.Operate(t.Context(), ref, spoke.Operation{Kind: schemas.OperationSync, RequestID: "local"}); err != nil {
			t.Fatal(err)
		}
		out := &outbox{}
		a, err := spoke.NewApplier("c1", c, sim.NewStore(), out, events.SealingKey{}, spoke.WithOperationMaxAge(10*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		op, err := a.Operator()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- op.Run(ctx) }()
		ds := []*events.Decoded{syncEvent(t, 1), syncEvent(t, 2), syncEvent(t, 3)}
		for _, d := range ds {
			if err := a.Handle(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		settle(5 * time.Second)
		if got := out.all(); len(got) != 0 {
			t.Fatalf("while Argo CD runs another sync: %v, want nothing started", got)
		}
		id := func(i int) string { return ds[i].Event.ID() }
		step := func() { c.Step(time.Now().Add(2*time.Hour), time.Second); settle(2 * time.Second) }
		step() // the local sync ends; the first queued one starts
		want := []string{"applied " + id(0)}
		if got := out.all(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after the local sync ended: %v, want %v", got, want)
		}
		step() // the first ends; the second starts
		want = append(want, "completed:Succeeded "+id(0), "applied "+id(1))
		if got := out.all(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after the first ended: %v, want %v", got, want)
		}
		settle(11 * time.Minute) // the third expires while the second runs: rejected at once
		want = append(want, "stale "+id(2))
		if got := out.all(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after the third expired: %v, want %v", got, want)
		}
		step()
		want = append(want, "completed:Succeeded "+id(1))
		if got := out.all(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after the second ended: %v, want %v", got, want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// counting is a simulated Argo CD that counts the operations started on
// it, by request id.
type counting struct {
	*sim.Cluster
	mu     sync.Mutex
	starts map[string]int
	// lost is how many of the next writes Argo CD stores while their
	// answer is lost on the way back (a timeout).
	lost int
}

func (c *counting) Start(ctx context.Context, ref spoke.Ref, op spoke.Operation, version string) error {
	err := c.Cluster.Start(ctx, ref, op, version)
	if err == nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.starts[op.RequestID]++
		if c.lost > 0 {
			c.lost--
			return errors.New("the answer was lost: the connection was cut")
		}
	}
	return err
}

// operatorRig is an Operator on a simulated Argo CD whose operations end
// only when the test steps it, with one Application, guestbook.
type operatorRig struct {
	c    *counting
	out  *outbox
	a    *spoke.Applier
	done chan error
}

func newOperatorRig(t *testing.T, ctx context.Context) *operatorRig {
	t.Helper()
	return newOperatorRigOn(t, ctx, sim.NewStore(), 0)
}

// settle lets the bubble's clock run d, then waits for every goroutine
// in it to block.
func settle(d time.Duration) { time.Sleep(d); synctest.Wait() }

// handle hands the agent a sync request at each of offsets, then lets
// the Operator run 3 s.
func (r *operatorRig) handle(t *testing.T, ctx context.Context, offsets ...int64) []*events.Decoded {
	t.Helper()
	var ds []*events.Decoded
	for _, o := range offsets {
		d := syncEvent(t, o)
		if err := r.a.Handle(ctx, d); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	settle(3 * time.Second)
	return ds
}

// hide ends what Argo CD runs, then runs a sync someone made in the
// cluster to its end: the operation before it shows no more.
func (r *operatorRig) hide(t *testing.T, ctx context.Context) {
	t.Helper()
	ref := spoke.Ref{Kind: spoke.KindApplication, Namespace: "argocd", Name: "guestbook"}
	r.c.Step(time.Now().Add(2*time.Hour), time.Second)
	if err := r.c.Operate(ctx, ref, spoke.Operation{Kind: schemas.OperationSync, RequestID: "local"}); err != nil {
		t.Fatal(err)
	}
	r.c.Step(time.Now().Add(2*time.Hour), time.Second)
}

// newOperatorRigOn is newOperatorRig keeping the agent's state in st,
// the answers to its first lost writes lost.
func newOperatorRigOn(t *testing.T, ctx context.Context, st spoke.OperationStore, lost int) *operatorRig {
	t.Helper()
	c := &counting{Cluster: sim.NewCluster(sim.WithBehaviour(sim.Behaviour{SyncTime: [2]time.Duration{time.Hour, time.Hour},
		HealthTime: [2]time.Duration{time.Second, time.Second}, RecoverTime: [2]time.Duration{time.Minute, time.Minute}}), sim.WithSeed(1)),
		starts: map[string]int{}, lost: lost}
	ref := spoke.Ref{Kind: spoke.KindApplication, Namespace: "argocd", Name: "guestbook"}
	if err := c.Apply(ctx, &spoke.Object{Ref: ref, Generation: 1,
		Spec: json.RawMessage(`{"project":"default","destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}`)}); err != nil {
		t.Fatal(err)
	}
	c.Step(time.Now().Add(2*time.Hour), time.Second)
	r := &operatorRig{c: c, out: &outbox{}, done: make(chan error, 1)}
	var err error
	if r.a, err = spoke.NewApplier("c1", c, st, r.out, events.SealingKey{}); err != nil {
		t.Fatal(err)
	}
	op, err := r.a.Operator()
	if err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- op.Run(ctx) }()
	return r
}

// TestOperatorNeverStartsTwice: a sync is written to Argo CD while the
// status topic is away, so its acknowledgement waits; it ends, and a sync
// someone made in the cluster runs after it and hides it. When the topic is
// back, the agent says it does not know how the first ended; it never
// writes it to Argo CD again.
func TestOperatorNeverStartsTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		r := newOperatorRig(t, ctx)
		r.out.failing(events.TypeConfigApplied)
		d := r.handle(t, ctx, 1)[0]
		r.hide(t, ctx)
		r.out.failing("")
		settle(3 * time.Second)
		if n := r.c.starts["req-1"]; n != 1 {
			t.Errorf("the sync was written to Argo CD %d times, want once", n)
		}
		if got, want := r.out.all(), []string{"completed:Unknown " + d.Event.ID()}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("acknowledgements %v, want %v", got, want)
		}
		cancel()
		if err := <-r.done; err != nil {
			t.Fatal(err)
		}
	})
}

// forgetful is an agent's state that cannot record an operation as
// started while failing is set, as a state store that is away would.
type forgetful struct {
	*sim.Store
	mu      sync.Mutex
	failing bool
}

func (f *forgetful) fail(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = on
}

func (f *forgetful) Swap(ctx context.Context, key string, a spoke.Applied, was func(spoke.Applied, bool) bool) (bool, error) {
	f.mu.Lock()
	fail := f.failing && a.Phase == spoke.OperationStarted
	f.mu.Unlock()
	if fail {
		return false, errors.New("the state store is away")
	}
	return f.Store.Swap(ctx, key, a, was)
}

// TestOperatorNeverStartsTwiceOnALostRecord: while the agent's state
// cannot record a sync as started, the sync is not written to Argo CD
// once for each try: when Argo CD ran it meanwhile and a sync someone
// made in the cluster hid it, a sync recorded as started only after it
// was written would be written again. It is written once.
func TestOperatorNeverStartsTwiceOnALostRecord(t *testing.T) {
	writtenOnceWhileTheStateIsAway(t, 0)
}

// TestOperatorNeverStartsTwiceOnALostAnswer: a sync Argo CD stored whose
// answer the agent lost is one the agent wrote, once it sees it there,
// even while its state cannot record it started: hidden by another
// operation before the record is stored, it is not written again.
func TestOperatorNeverStartsTwiceOnALostAnswer(t *testing.T) {
	writtenOnceWhileTheStateIsAway(t, 1)
}

// writtenOnceWhileTheStateIsAway hands the agent a sync while its state
// cannot record one started, the answers to its first lost writes lost;
// Argo CD runs it and a sync made in the cluster hides it, then the state
// comes back: the sync was written to Argo CD once.
func writtenOnceWhileTheStateIsAway(t *testing.T, lost int) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		st := &forgetful{Store: sim.NewStore(), failing: true}
		r := newOperatorRigOn(t, ctx, st, lost)
		r.handle(t, ctx, 1)
		r.hide(t, ctx)
		st.fail(false)
		settle(3 * time.Second)
		r.c.Step(time.Now().Add(2*time.Hour), time.Second)
		settle(3 * time.Second)
		if n := r.c.starts["req-1"]; n != 1 {
			t.Errorf("the sync was written to Argo CD %d times, want once", n)
		}
		cancel()
		if err := <-r.done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestOperatorForgetsWhatAnotherMovedOn: what the Operator remembers it
// wrote, while the state cannot record it started, goes once the record
// is no longer open (another agent ended it): it does not grow with time.
func TestOperatorForgetsWhatAnotherMovedOn(t *testing.T) {
	ctx := t.Context()
	c := &counting{Cluster: sim.NewCluster(sim.WithBehaviour(sim.Behaviour{SyncTime: [2]time.Duration{time.Hour, time.Hour},
		HealthTime: [2]time.Duration{time.Second, time.Second}, RecoverTime: [2]time.Duration{time.Minute, time.Minute}}), sim.WithSeed(1)),
		starts: map[string]int{}}
	ref := spoke.Ref{Kind: spoke.KindApplication, Namespace: "argocd", Name: "guestbook"}
	if err := c.Apply(ctx, &spoke.Object{Ref: ref, Generation: 1,
		Spec: json.RawMessage(`{"project":"default","destination":{"server":"https://kubernetes.default.svc","namespace":"web"}}`)}); err != nil {
		t.Fatal(err)
	}
	c.Step(time.Now().Add(2*time.Hour), time.Second)
	st := &forgetful{Store: sim.NewStore(), failing: true}
	a, err := spoke.NewApplier("c1", c, st, &outbox{}, events.SealingKey{})
	if err != nil {
		t.Fatal(err)
	}
	op, err := a.Operator()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Handle(ctx, syncEvent(t, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Step(ctx); err == nil || op.Written() != 1 || c.starts["req-1"] != 1 {
		t.Fatalf("a sync written while its record cannot be stored: %v, %d remembered, %d starts", err, op.Written(), c.starts["req-1"])
	}
	open, err := st.OpenOperations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range open { // another agent ends it
		r.Phase = spoke.OperationEnded
		if err := st.Put(ctx, k, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := op.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if n := op.Written(); n != 0 {
		t.Errorf("%d operations remembered after another agent ended them, want none", n)
	}
}

// TestOperatorRecordsAnEndBeforeTheNext: while the end of a sync cannot be
// published, the next sync of the Application waits, so that it cannot
// hide the first one's result.
func TestOperatorRecordsAnEndBeforeTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		r := newOperatorRig(t, ctx)
		r.out.failing(events.TypeOperationCompleted)
		ds := r.handle(t, ctx, 1, 2)
		r.c.Step(time.Now().Add(2*time.Hour), time.Second) // the first ends
		settle(5 * time.Second)
		if n := r.c.starts["req-2"]; n != 0 {
			t.Fatalf("the second sync started while the first one's end was not published")
		}
		r.out.failing("")
		settle(3 * time.Second)
		want := []string{"applied " + ds[0].Event.ID(), "completed:Succeeded " + ds[0].Event.ID(), "applied " + ds[1].Event.ID()}
		if got := r.out.all(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("acknowledgements %v, want %v", got, want)
		}
		cancel()
		if err := <-r.done; err != nil {
			t.Fatal(err)
		}
	})
}

// stuck is a simulated Argo CD whose controller never takes an operation:
// what Start writes waits in the Application's operation field for good,
// until Withdraw takes it out.
type stuck struct {
	*counting
	mu        sync.Mutex
	waiting   string // the request in the operation field
	withdrawn []string
}

func (s *stuck) Start(_ context.Context, _ spoke.Ref, op spoke.Operation, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting = op.RequestID
	s.counting.mu.Lock()
	s.starts[op.RequestID]++
	s.counting.mu.Unlock()
	return nil
}

func (s *stuck) Inspect(ctx context.Context, ref spoke.Ref, requestID string) (spoke.OperationState, error) {
	st, err := s.counting.Inspect(ctx, ref, requestID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting != "" {
		st.Busy, st.Waiting = true, s.waiting == requestID
	}
	return st, err
}

func (s *stuck) Withdraw(_ context.Context, _ spoke.Ref, requestID, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.withdrawn, s.waiting = append(s.withdrawn, requestID), ""
	return nil
}

// TestOperatorWithdrawsWhatArgoCDNeverTakes: a sync written to an Argo CD
// whose controller never takes it is not acknowledged applied; at its
// expiry it is taken back out of the Application and rejected as stale,
// and the next sync of the Application then starts.
func TestOperatorWithdrawsWhatArgoCDNeverTakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		r := newOperatorRig(t, ctx)
		s := &stuck{counting: r.c}
		a, err := spoke.NewApplier("c1", s, sim.NewStore(), r.out, events.SealingKey{})
		if err != nil {
			t.Fatal(err)
		}
		op, err := a.Operator()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- op.Run(ctx) }()
		first := syncEvent(t, 1)
		if err := a.Handle(ctx, first); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if got := r.out.all(); len(got) != 0 || s.starts["req-1"] != 1 {
			t.Fatalf("a sync the controller has not taken: acknowledgements %v, written %d times; want none, once", got, s.starts["req-1"])
		}
		second := syncEvent(t, 2)
		if err := a.Handle(ctx, second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(6 * time.Minute) // the first expires
		synctest.Wait()
		if fmt.Sprint(s.withdrawn) != "[req-1]" || s.starts["req-2"] != 1 {
			t.Errorf("after the first expired: withdrawn %v, the second written %d times; want req-1 withdrawn, the second written",
				s.withdrawn, s.starts["req-2"])
		}
		if got := r.out.all(); len(got) == 0 || got[0] != "stale "+first.Event.ID() {
			t.Errorf("acknowledgements %v, want the first rejected as stale", got)
		}
		cancel()
		for _, ch := range []chan error{done, r.done} {
			if err := <-ch; err != nil {
				t.Fatal(err)
			}
		}
	})
}

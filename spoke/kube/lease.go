package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var leaseGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// ErrLeaseLost is returned by Lease.Run when the lease could not be renewed
// in time, or another holder took it: the agent has stopped, and the
// process should exit so that it starts again as a candidate.
var ErrLeaseLost = errors.New("the lease was lost")

// errRaced means another writer changed the Lease between the read and the
// write: read it again.
var errRaced = errors.New("another writer changed the lease first")

// LeaseTiming is the lease's clock, as client-go's leader election has it.
//   - Duration: how long a candidate waits, after it last saw the lease
//     change, before it takes the lease over (a holder killed with SIGKILL
//     is replaced after about this long).
//   - RenewDeadline: how long the holder keeps trying to renew before it
//     stops. It is shorter than Duration, so that the holder has stopped
//     before any candidate can start.
//   - RetryPeriod: how often the holder renews and a candidate tries.
type LeaseTiming struct {
	Duration, RenewDeadline, RetryPeriod time.Duration
}

// Validate says why t cannot work, if it cannot: the duration must be
// longer than the renew deadline, longer than the retry period, longer
// than zero.
func (t LeaseTiming) Validate() error {
	if t.RetryPeriod <= 0 || t.RenewDeadline <= t.RetryPeriod || t.Duration <= t.RenewDeadline {
		return fmt.Errorf("lease timing: want duration (%s) > renew deadline (%s) > retry period (%s) > 0", t.Duration, t.RenewDeadline, t.RetryPeriod)
	}
	return nil
}

// DefaultLeaseTiming is client-go's and kube-controller-manager's default.
var DefaultLeaseTiming = LeaseTiming{Duration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}

// Lease makes one process the only writer of a cluster's Argo CD: the
// agent runs only while its process holds a coordination.k8s.io/v1 Lease.
//
// It follows client-go's leader election (tools/leaderelection), which the
// agent does not link because that package brings client-go's whole typed
// clientset with it (see spoke's TestSpokeBinaryDoesNotLinkArgoCD): the
// Lease is read and written through the dynamic client, every write is a
// compare-and-set on its resourceVersion, and a candidate measures the
// holder's silence with its own clock, from when it last saw the Lease
// change, so that clocks that disagree between nodes do no harm.
type Lease struct {
	leases dynamic.ResourceInterface
	name   string
	holder string
	timing LeaseTiming
	log    *slog.Logger

	// Run's own: the Lease as last seen, and when that was.
	seen   leaseRecord
	seenAt time.Time
}

type leaseRecord struct {
	holder      string
	renewTime   string
	transitions int64
	duration    time.Duration
}

// NewLease returns the Lease namespace/name as seen by holder, a name
// unique to this process (the pod's name and a process id, say).
func NewLease(dyn dynamic.Interface, namespace, name, holder string, timing LeaseTiming, log *slog.Logger) (*Lease, error) {
	var errs []error
	if dyn == nil || namespace == "" || name == "" || holder == "" {
		errs = append(errs, errors.New("a dynamic client, a namespace, a name and a holder are required"))
	}
	if err := timing.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("lease: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Lease{leases: dyn.Resource(leaseGVR).Namespace(namespace), name: name, holder: holder, timing: timing, log: log}, nil
}

// Run waits until it holds the lease, then runs lead with a context that
// ends when ctx does or when the lease is lost, and renews the lease until
// then. It returns lead's error, ErrLeaseLost if the lease was lost, or
// nil once ctx ended; on the way out it hands the lease back, if it still
// holds it, so that another candidate takes over at once.
func (l *Lease) Run(ctx context.Context, lead func(context.Context) error) error {
	if err := l.acquire(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	l.log.InfoContext(ctx, "holding the lease", "lease", l.name, "holder", l.holder)
	leadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	renewed := make(chan error, 1)
	go func() {
		err := l.renew(leadCtx)
		cancel() // lost: stop leading now
		renewed <- err
	}()
	err := lead(leadCtx)
	cancel()
	lost := <-renewed
	if lost == nil {
		releaseCtx, done := context.WithTimeout(context.WithoutCancel(ctx), l.timing.RetryPeriod)
		defer done()
		if rerr := l.release(releaseCtx); rerr != nil {
			l.log.WarnContext(ctx, "hand back the lease", "lease", l.name, "err", rerr)
		}
	}
	if err == nil && ctx.Err() == nil {
		err = lost
	}
	return err
}

// acquire tries every RetryPeriod until it holds the lease or ctx ends.
func (l *Lease) acquire(ctx context.Context) error {
	t := time.NewTicker(l.timing.RetryPeriod)
	defer t.Stop()
	waiting := false
	for {
		held, err := l.try(ctx)
		switch {
		case held:
			return nil
		case errors.Is(err, errRaced):
		case err != nil && ctx.Err() == nil:
			l.log.WarnContext(ctx, "take the lease; will retry", "lease", l.name, "err", err)
		case !waiting:
			waiting = true
			l.log.InfoContext(ctx, "waiting for the lease", "lease", l.name, "holder", l.seen.holder)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// renew renews the lease every RetryPeriod until ctx ends (nil) or a
// renewal has not succeeded for RenewDeadline, or another holder has the
// lease (ErrLeaseLost).
func (l *Lease) renew(ctx context.Context) error {
	t := time.NewTicker(l.timing.RetryPeriod)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		tryCtx, cancel := context.WithDeadline(ctx, last.Add(l.timing.RenewDeadline))
		held, err := l.try(tryCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case held:
			last = time.Now()
			continue
		case err == nil:
			l.log.ErrorContext(ctx, "another holder took the lease; stopping", "lease", l.name, "holder", l.seen.holder)
			return ErrLeaseLost
		case time.Since(last) >= l.timing.RenewDeadline:
			l.log.ErrorContext(ctx, "the lease was not renewed in time; stopping", "lease", l.name, "err", err)
			return ErrLeaseLost
		}
		l.log.WarnContext(ctx, "renew the lease; will retry", "lease", l.name, "err", err)
	}
}

// try takes or renews the lease, unless another holder has it and has
// renewed it within its duration, as this process's clock measures.
func (l *Lease) try(ctx context.Context) (bool, error) {
	now := time.Now()
	u, err := l.leases.Get(ctx, l.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		u = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
			"metadata": map[string]any{"name": l.name}, "spec": map[string]any{}}}
		l.hold(u, now, leaseRecord{})
		if _, err := l.leases.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return false, errRaced
			}
			return false, err
		}
		l.seen, l.seenAt = recordOf(u), now
		return true, nil
	}
	if err != nil {
		return false, err
	}
	rec := recordOf(u)
	if rec != l.seen {
		l.seen, l.seenAt = rec, now
	}
	d := rec.duration
	if d <= 0 {
		d = l.timing.Duration
	}
	if rec.holder != "" && rec.holder != l.holder && now.Before(l.seenAt.Add(d)) {
		return false, nil
	}
	l.hold(u, now, rec)
	got, err := l.leases.Update(ctx, u, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return false, errRaced
	}
	if err != nil {
		return false, err
	}
	l.seen, l.seenAt = recordOf(got), now
	return true, nil
}

// hold writes this holder into u's spec, renewed at now.
func (l *Lease) hold(u *unstructured.Unstructured, now time.Time, prev leaseRecord) {
	spec, _ := u.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		u.Object["spec"] = spec
	}
	stamp := now.UTC().Format(metav1.RFC3339Micro)
	if prev.holder != l.holder {
		spec["acquireTime"] = stamp
		if prev.holder != "" || prev.renewTime != "" {
			spec["leaseTransitions"] = prev.transitions + 1
		}
	}
	spec["holderIdentity"] = l.holder
	spec["renewTime"] = stamp
	spec["leaseDurationSeconds"] = int64(math.Ceil(l.timing.Duration.Seconds()))
}

// release hands the lease back if this process holds it.
func (l *Lease) release(ctx context.Context) error {
	u, err := l.leases.Get(ctx, l.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if recordOf(u).holder != l.holder {
		return nil
	}
	spec := u.Object["spec"].(map[string]any)
	spec["holderIdentity"] = ""
	spec["leaseDurationSeconds"] = int64(1)
	spec["renewTime"] = time.Now().UTC().Format(metav1.RFC3339Micro)
	_, err = l.leases.Update(ctx, u, metav1.UpdateOptions{})
	return err
}

func recordOf(u *unstructured.Unstructured) leaseRecord {
	holder, _, _ := unstructured.NestedString(u.Object, "spec", "holderIdentity")
	renew, _, _ := unstructured.NestedString(u.Object, "spec", "renewTime")
	transitions, _, _ := unstructured.NestedInt64(u.Object, "spec", "leaseTransitions")
	secs, _, _ := unstructured.NestedInt64(u.Object, "spec", "leaseDurationSeconds")
	return leaseRecord{holder: holder, renewTime: renew, transitions: transitions, duration: time.Duration(secs) * time.Second}
}

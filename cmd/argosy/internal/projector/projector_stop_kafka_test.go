//go:build integration

package projector_test

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProjectorStopsWhileJoining stops a projector gracefully while its
// consumer group waits for a member that was killed: the stop must not wait
// for the group's rebalance.
func TestProjectorStopsWhileJoining(t *testing.T) {
	bin := buildArgosy(t)
	f := newFleet(t, "c1", "c2")
	p := &projectorProc{t: t, bin: bin, dir: t.TempDir(), f: f, store: "sqlite://" + t.TempDir() + "/views.db", group: "projector." + f.prefix}
	if err := f.step(0); err != nil {
		t.Fatal(err)
	}
	first := p.start()
	time.Sleep(3 * time.Second)
	if err := syscall.Kill(first.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExited(t, first)
	second := p.start()
	time.Sleep(3 * time.Second)
	if err := second.Terminate(30 * time.Second); err != nil {
		t.Fatalf("%v; log:\n%s", err, second.LogTail())
	}
	// Without the wait on the killed member, the stop was not the case
	// under test.
	if !strings.Contains(second.LogTail(), "leaving the consumer group timed out") {
		t.Errorf("the stop did not wait on the group's join; log:\n%s", second.LogTail())
	}
}

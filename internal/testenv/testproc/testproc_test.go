package testproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a server that ignores the signals
// listed after "ignore:", so that StopWith's escalation can be watched.
const helperEnv = "TESTPROC_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "graceful" {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		fmt.Println("ready")
		<-sigs
		return // exit status 0
	}
	if ignore, ok := strings.CutPrefix(os.Getenv(helperEnv), "ignore:"); ok {
		for _, s := range strings.Split(ignore, ",") {
			if s == "" {
				continue
			}
			n, err := strconv.Atoi(s)
			if err != nil {
				fmt.Fprintln(os.Stderr, "helper:", err)
				os.Exit(2)
			}
			signal.Ignore(syscall.Signal(n))
		}
		fmt.Println("ready")
		time.Sleep(time.Hour) // until a signal ends it
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// startHelper starts the test binary as a helper that ignores the given
// signals, and waits until it says it is ready.
func startHelper(t *testing.T, ignore ...syscall.Signal) *Proc {
	t.Helper()
	var nums []string
	for _, s := range ignore {
		nums = append(nums, strconv.Itoa(int(s)))
	}
	p, err := Start(t.TempDir(), "helper", os.Args[0], nil, []string{helperEnv + "=ignore:" + strings.Join(nums, ",")})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, p)
	return p
}

func waitReady(t *testing.T, p *Proc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := p.WaitFor(ctx, func(context.Context) error {
		if !strings.Contains(p.LogTail(), "ready") {
			return errors.New("not ready")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStopWith checks that each signal is tried in turn and that SIGKILL
// ends a process that ignores them all.
func TestStopWith(t *testing.T) {
	tests := []struct {
		name   string
		ignore []syscall.Signal
		sigs   []syscall.Signal
		want   syscall.Signal
	}{
		{"first signal", nil, []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}, syscall.SIGTERM},
		{"second signal", []syscall.Signal{syscall.SIGTERM}, []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}, syscall.SIGINT},
		{"all ignored", []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}, []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}, syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startHelper(t, tt.ignore...)
			if err := p.StopWith(200*time.Millisecond, tt.sigs...); err != nil {
				t.Fatalf("StopWith: %v", err)
			}
			ok, err := p.Exited()
			if !ok {
				t.Fatal("process still running after StopWith")
			}
			if got := exitSignal(err); got != tt.want {
				t.Errorf("process ended by %v (%v), want %v", got, err, tt.want)
			}
		})
	}
}

// TestTerminate checks that Terminate accepts only a clean exit on SIGTERM
// within the grace period.
func TestTerminate(t *testing.T) {
	tests := []struct {
		name    string
		start   func(t *testing.T) *Proc
		grace   time.Duration // a race-enabled binary sleeps 1 s at exit
		wantErr string
	}{
		{"clean exit", startGraceful, 10 * time.Second, ""},
		{"killed by the signal", func(t *testing.T) *Proc { return startHelper(t) }, 10 * time.Second, "exited uncleanly"},
		{"ignores the signal", func(t *testing.T) *Proc { return startHelper(t, syscall.SIGTERM) }, 300 * time.Millisecond, "TestMain("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.start(t)
			err := p.Terminate(tt.grace)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Terminate: %v, want an error containing %q", err, tt.wantErr)
			}
			if ok, _ := p.Exited(); !ok {
				t.Fatal("process still running after Terminate")
			}
		})
	}
}

func startGraceful(t *testing.T) *Proc {
	t.Helper()
	p, err := Start(t.TempDir(), "helper", os.Args[0], nil, []string{helperEnv + "=graceful"})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, p)
	return p
}

func exitSignal(err error) syscall.Signal {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0
	}
	return ws.Signal()
}

// TestAsUser checks that a process runs as the user it is given: nobody
// when the tests run as root, or the caller's own user otherwise.
func TestAsUser(t *testing.T) {
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	if uid == 0 {
		uid, gid = 65534, 65534 // nobody, nogroup
	}
	dir := t.TempDir()
	// The process starts in dir, so its user must be able to enter it and
	// its parent, which TempDir makes private.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Start(dir, "id", "sh", []string{"-c", "id -u; id -g; id -G"}, nil, AsUser(uid, gid))
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitFor(t.Context(), func(context.Context) error { return errors.New("wait for exit") })
	if err == nil || !strings.Contains(err.Error(), "exited (exit status 0)") {
		t.Fatalf("id did not exit cleanly: %v", err)
	}
	got := strings.Fields(p.LogTail())
	want := []string{fmt.Sprint(uid), fmt.Sprint(gid)}
	if len(got) < 3 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("id printed %q, want uid %s and gid %s", got, want[0], want[1])
	}
	if os.Getuid() == 0 && (len(got) != 3 || got[2] != want[1]) {
		t.Errorf("supplementary groups %q, want only %s", got[2:], want[1])
	}
}

func TestWaitExit(t *testing.T) {
	quick, err := Start(t.TempDir(), "quick", "sh", []string{"-c", "exit 3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exited, err := quick.WaitExit(time.Minute); !exited || err == nil {
		t.Errorf("a process that exits 3: exited %v, err %v", exited, err)
	}
	slow, err := Start(t.TempDir(), "slow", "sleep", []string{"60"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exited, _ := slow.WaitExit(100 * time.Millisecond); exited {
		t.Error("a sleeping process is said to have exited")
	}
	if err := slow.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}

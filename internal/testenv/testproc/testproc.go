// Package testproc runs the server processes that integration tests start
// (brokers, etcd, apiservers): each in a process group of its own, logging to
// a file, stopped gently and then firmly, and killed with the test binary
// even when the binary is killed.
package testproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// Proc is one server process. It runs in a process group of its own, and is
// killed with the test binary: the goroutine that starts it holds its OS
// thread for the process's life, so the parent-death signal (which Linux
// ties to the forking thread) fires only when the test binary dies.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

// Option changes how Start runs a process.
type Option func(*syscall.SysProcAttr)

// AsUser runs the process as user uid with group gid and no supplementary
// groups, for servers that refuse to run as root (PostgreSQL). Changing user
// needs root, or uid and gid already being the caller's own.
func AsUser(uid, gid uint32) Option {
	return func(a *syscall.SysProcAttr) {
		a.Credential = &syscall.Credential{Uid: uid, Gid: gid, NoSetGroups: uid == uint32(os.Getuid())}
	}
}

// Start starts bin with args and env, logging to dir/name.log.
func Start(dir, name, bin string, args, env []string, opts ...Option) (*Proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	// The parent-death signal survives AsUser: a change of user clears it,
	// but Go's child sets it after changing user.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	for _, o := range opts {
		o(cmd.SysProcAttr)
	}
	p := &Proc{Name: name, cmd: cmd, log: logPath, done: make(chan error, 1)}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the process
		if err := cmd.Start(); err != nil {
			started <- err
			p.done <- errors.Join(err, f.Close())
			return
		}
		started <- nil
		p.done <- errors.Join(cmd.Wait(), f.Close())
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

// Exited reports whether the process has ended, and its exit error.
func (p *Proc) Exited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// WaitExit waits up to timeout for the process to end by itself (or by a
// signal someone else sent), and reports whether it did and its exit error.
func (p *Proc) WaitExit(timeout time.Duration) (bool, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	case <-t.C:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace, and
// waits for the process to end. An exit caused by those signals is not an
// error.
func (p *Proc) Stop(grace time.Duration) error {
	return p.StopWith(grace, syscall.SIGTERM)
}

// Terminate asks the process to shut down gracefully: it sends SIGTERM to
// the process alone and waits up to grace. It returns an error, after
// killing the process, if the process is still running then, and the exit
// error if it did not exit with status 0.
func (p *Proc) Terminate(grace time.Duration) error {
	if ok, err := p.Exited(); ok {
		return fmt.Errorf("%s had already exited: %w", p.Name, err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("terminate %s: %w", p.Name, err)
	}
	if ok, err := p.WaitExit(grace); ok {
		if err != nil {
			return fmt.Errorf("%s exited uncleanly after SIGTERM: %w", p.Name, err)
		}
		return nil
	}
	// Ask a Go process where it is stuck: SIGQUIT prints every goroutine.
	before, _ := os.Stat(p.log)
	if err := p.cmd.Process.Signal(syscall.SIGQUIT); err == nil {
		p.WaitExit(5 * time.Second) //nolint:errcheck // the exit status after SIGQUIT says nothing; the log does
	}
	return errors.Join(fmt.Errorf("%s still running %v after SIGTERM; after SIGQUIT its log says:\n%s", p.Name, grace, p.logSince(before)), p.Stop(0))
}

// logSince returns up to 64 KiB of the log written after the size in fi.
func (p *Proc) logSince(fi os.FileInfo) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if fi != nil && fi.Size() <= int64(len(b)) {
		b = b[fi.Size():]
	}
	return string(b[:min(len(b), 64<<10)])
}

// StopWith sends each of sigs in turn to the process group, giving the
// process grace after each to end, then SIGKILL, and waits for the process
// to end. An exit caused by those signals is not an error.
func (p *Proc) StopWith(grace time.Duration, sigs ...syscall.Signal) error {
	for _, sig := range sigs {
		if ok, _ := p.Exited(); ok {
			return nil
		}
		if err := signalGroup(p.Pid(), sig); err != nil {
			return err
		}
		select {
		case err := <-p.done:
			p.done <- err
			return nil
		case <-time.After(grace):
		}
	}
	if ok, _ := p.Exited(); ok {
		return nil
	}
	if err := signalGroup(p.Pid(), syscall.SIGKILL); err != nil {
		return err
	}
	err := <-p.done
	p.done <- err
	return nil
}

func signalGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", pgid, err)
	}
	return nil
}

// LogTail returns the end of the process's log, for error messages.
func (p *Proc) LogTail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// WaitFor polls ready until it returns nil, the process exits or ctx ends.
func (p *Proc) WaitFor(ctx context.Context, ready func(context.Context) error) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		if ok, err := p.Exited(); ok {
			if err == nil {
				err = errors.New("exit status 0")
			}
			return fmt.Errorf("%s exited (%w) before it was ready; log:\n%s", p.Name, err, p.LogTail())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last: %w); log:\n%s", p.Name, ctx.Err(), last, p.LogTail())
		case <-tick.C:
		}
	}
}

// WaitStatus waits, up to timeout, until GET url answers code, and returns
// the body of that answer; it fails if the process exits first.
func (p *Proc) WaitStatus(ctx context.Context, url string, code int, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body string
	err := p.WaitFor(ctx, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != code {
			return fmt.Errorf("%s answered %d %q, want %d", url, resp.StatusCode, b, code)
		}
		body = string(b)
		return nil
	})
	return body, err
}

// FreePorts returns n free TCP ports on 127.0.0.1.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Pid returns the process id (also its process group id).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

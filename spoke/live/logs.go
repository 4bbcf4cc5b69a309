package live

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// LogReader streams a Pod's log, as the Kubernetes API's pods/log
// endpoint does. PodLogs is the one on the API; tests give their own.
type LogReader interface {
	PodLogs(ctx context.Context, namespace, pod string, opts LogOptions) (io.ReadCloser, error)
}

// LogOptions says which lines of a Pod's log to read.
type LogOptions struct {
	// Container is the container's name; empty is the Pod's only one.
	Container string `json:"container,omitempty"`
	// TailLines is how many of the newest lines to read; 0 is the
	// Source's default (WithTailLines).
	TailLines int64 `json:"tailLines,omitempty"`
	// SinceSeconds reads only lines newer than this many seconds; 0 is
	// no such limit.
	SinceSeconds int64 `json:"sinceSeconds,omitempty"`
	// Timestamps begins each line with the time its container wrote it
	// (RFC 3339 with nanoseconds) and a space.
	Timestamps bool `json:"timestamps,omitempty"`
}

// Logs is the answer to a log question: a Pod's newest lines, oldest
// first, without their line ends.
type Logs struct {
	Pod       Ref      `json:"pod"`
	Container string   `json:"container,omitempty"`
	Lines     []string `json:"lines"`
	// Timestamps says each line begins with the time its container wrote
	// it and a space, as the question asked (LogOptions.Timestamps).
	Timestamps bool `json:"timestamps,omitempty"`
	// Truncated says older lines were dropped to keep the answer within
	// the Source's bound (WithMaxLogBytes).
	Truncated bool `json:"truncated,omitempty"`
}

// Logs returns the newest log lines of pod, if it is a Pod of app's tree;
// anything else is ErrNotInApp, and no log is read. The lines hold at most
// the Source's bound of bytes (WithMaxLogBytes): past it the oldest are
// dropped and Truncated set.
func (s *Source) Logs(ctx context.Context, app string, pod Ref, opts LogOptions) (*Logs, error) {
	if pod.Group != "" || pod.Kind != "Pod" {
		return nil, fmt.Errorf("%s is not a Pod: %w", pod, ErrNotInApp)
	}
	n, err := s.node(ctx, app, pod)
	if err != nil {
		return nil, err
	}
	if opts.TailLines <= 0 {
		opts.TailLines = s.opts.tailLines
	}
	rc, err := s.logs.PodLogs(ctx, n.Namespace, n.Name, opts)
	if err != nil {
		return nil, fmt.Errorf("logs of %s: %w", pod, err)
	}
	lines, truncated, readErr := newest(rc, s.opts.maxLogBytes)
	if err := errors.Join(readErr, rc.Close()); err != nil {
		return nil, fmt.Errorf("logs of %s: %w", pod, err)
	}
	return &Logs{Pod: n.TreeRef, Container: opts.Container, Lines: lines, Timestamps: opts.Timestamps, Truncated: truncated}, nil
}

// newest reads r to its end and keeps its newest lines that fit in limit
// bytes (each line counted with its line end). A line longer than limit is
// cut to its last limit bytes. It reports whether anything was dropped.
func newest(r io.Reader, limit int) (lines []string, truncated bool, err error) {
	br := bufio.NewReader(r)
	lines, size := []string{}, 0
	var cur []byte // the line being read: its last limit bytes
	for {
		chunk, err := br.ReadSlice('\n')
		cur = append(cur, chunk...)
		if len(cur) > limit {
			cur, truncated = append(cur[:0], cur[len(cur)-limit:]...), true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the rest of a long line follows
		}
		if len(cur) > 0 {
			lines, size, cur = append(lines, string(cur)), size+len(cur), cur[:0]
			for size > limit {
				size, lines, truncated = size-len(lines[0]), lines[1:], true
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	for i, l := range lines {
		lines[i] = trimEnd(l)
	}
	return lines, truncated, nil
}

// trimEnd drops a line's end, "\n" or "\r\n".
func trimEnd(s string) string {
	if len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
		if len(s) > 0 && s[len(s)-1] == '\r' {
			s = s[:len(s)-1]
		}
	}
	return s
}

// PodLogs reads Pod logs from the Kubernetes API's pods/log endpoint with
// a REST client of core/v1, without client-go's typed clientset (which
// links every API group).
type PodLogs struct {
	c rest.Interface
}

// NewPodLogs returns a PodLogs that calls the API as cfg says.
func NewPodLogs(cfg *rest.Config) (*PodLogs, error) {
	c := dynamic.ConfigFor(cfg)
	c.APIPath = "/api"
	c.GroupVersion = &schema.GroupVersion{Version: "v1"}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("pod logs client: %w", err)
	}
	return &PodLogs{c: rc}, nil
}

// PodLogs streams the log of pod in namespace.
func (p *PodLogs) PodLogs(ctx context.Context, namespace, pod string, opts LogOptions) (io.ReadCloser, error) {
	req := p.c.Get().Namespace(namespace).Resource("pods").Name(pod).SubResource("log")
	if opts.Container != "" {
		req = req.Param("container", opts.Container)
	}
	if opts.TailLines > 0 {
		req = req.Param("tailLines", strconv.FormatInt(opts.TailLines, 10))
	}
	if opts.SinceSeconds > 0 {
		req = req.Param("sinceSeconds", strconv.FormatInt(opts.SinceSeconds, 10))
	}
	if opts.Timestamps {
		req = req.Param("timestamps", "true")
	}
	rc, err := req.Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("read log of pod %s/%s: %w", namespace, pod, err)
	}
	return rc, nil
}

package events

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Demux shares one client's fetches among the consumers of its topics, one
// consumer a topic: an agent's config Reader and TrustFollower read
// through one client, so that the agent holds one set of connections to
// each broker rather than one a consumer.
//
// It runs no goroutine of its own. Whichever consumer polls while no other
// does polls the client for all of them, keeps the other topics' fetches
// for their consumers and wakes them; a consumer that polls while another
// does waits for that poll to end, then takes its share, or polls itself.
// A poll that returns only other topics' records does not end the
// poller's PollFetches: it polls again, so that each consumer sees a poll
// end only with its own records or errors, or its ctx's end, as with a
// client of its own. Pausing a topic's partitions on the client is each
// consumer's affair; the Demux holds at most what one poll returned for a
// topic whose consumer is not polling.
type Demux struct {
	client *kgo.Client

	mu      sync.Mutex
	polling chan struct{}          // closed when the current poll ends; nil while none runs
	held    map[string]kgo.Fetches // by topic, for its consumer
	closed  bool                   // the client is closed
}

// NewDemux returns a Demux of client's fetches. Each of the client's
// consumed topics must have a consumer that polls Topic(topic); the
// fetches of a topic without one are dropped.
func NewDemux(client *kgo.Client) *Demux {
	return &Demux{client: client, held: map[string]kgo.Fetches{}}
}

// Topic returns topic's share of the fetches: give it to topic's consumer
// with WithFetchSource.
func (d *Demux) Topic(topic string) FetchSource {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.held[topic]; !ok {
		d.held[topic] = nil
	}
	return share{d: d, topic: topic}
}

// share is one topic's FetchSource.
type share struct {
	d     *Demux
	topic string
}

// PollFetches returns the fetches of the share's topic and the client's
// own errors (its closing, ctx's end), as kgo.Client.PollFetches does.
func (s share) PollFetches(ctx context.Context) kgo.Fetches {
	d := s.d
	for {
		d.mu.Lock()
		if fs := d.held[s.topic]; len(fs) > 0 {
			d.held[s.topic] = nil
			d.mu.Unlock()
			return fs
		}
		if d.closed {
			d.mu.Unlock()
			return kgo.NewErrFetch(kgo.ErrClientClosed)
		}
		if wait := d.polling; wait != nil {
			d.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return kgo.NewErrFetch(ctx.Err())
			}
		}
		done := make(chan struct{})
		d.polling = done
		d.mu.Unlock()
		fs := d.client.PollFetches(ctx)
		d.mu.Lock()
		own := d.hand(s.topic, fs)
		d.polling = nil
		close(done)
		d.mu.Unlock()
		if len(own) > 0 {
			return own
		}
		if ctx.Err() != nil {
			return kgo.NewErrFetch(ctx.Err())
		}
	}
}

// hand keeps the other topics' parts of fs for their consumers and
// returns topic's part, with the errors that belong to no topic. Its
// caller holds d.mu.
func (d *Demux) hand(topic string, fs kgo.Fetches) kgo.Fetches {
	var own kgo.Fetches
	for _, f := range fs {
		for _, ft := range f.Topics {
			part := kgo.Fetch{Topics: []kgo.FetchTopic{ft}}
			switch held, ok := d.held[ft.Topic]; {
			case ft.Topic == topic || ft.Topic == "":
				own = append(own, part)
				if ft.Topic == "" && fs.IsClientClosed() {
					d.closed = true
				}
			case ok:
				d.held[ft.Topic] = append(held, part)
			}
		}
	}
	return own
}

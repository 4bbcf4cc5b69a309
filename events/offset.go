package events

import (
	"context"
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// What ListOffsets lists, besides the first offset at or after a
// millisecond timestamp.
const (
	// ListEnd is a partition's end: its high watermark or, listed
	// committed, its last stable offset.
	ListEnd int64 = -1
	// ListStart is a partition's first offset still held.
	ListStart int64 = -2
)

// ListOffsets lists one offset of each of parts, partitions of topic: at
// ListEnd, ListStart or the first offset at or after a millisecond
// timestamp (the end if none is, as kadm does); committed lists as a read
// committed consumer sees the partitions, the end included (the last
// stable offset, not the high watermark). It sends one ListOffsets
// request, which the client splits among the partitions' leaders, and a
// second for the ends of partitions with no offset at or after the time.
// A kadm listing asks for every partition of the topic, and so sends a
// request to every broker that leads one of them, after a Metadata
// request: for an agent, which reads one partition, its periodic listings
// would hold a connection open to every broker.
func ListOffsets(ctx context.Context, cl *kgo.Client, topic string, parts []int32, at int64, committed bool) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	if committed {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, at
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := sendListOffsets(ctx, cl, topic, parts, req)
	if err != nil {
		return nil, fmt.Errorf("list offsets of %s: %w", topic, err)
	}
	out := make(map[int32]int64, len(parts))
	var none []int32 // no offset at or after the time
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if t.Topic != topic {
				continue
			}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("list offsets of %s/%d: %w", topic, p.Partition, err)
			}
			if at >= 0 && p.Offset == -1 {
				none = append(none, p.Partition)
				continue
			}
			out[p.Partition] = p.Offset
		}
	}
	if len(none) > 0 {
		ends, err := ListOffsets(ctx, cl, topic, none, ListEnd, committed)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, ends)
	}
	for _, p := range parts {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("list offsets of %s/%d: not in the response", topic, p)
		}
	}
	return out, nil
}

// ListOffset is ListOffsets of one partition.
func ListOffset(ctx context.Context, cl *kgo.Client, topic string, partition int32, at int64, committed bool) (int64, error) {
	l, err := ListOffsets(ctx, cl, topic, []int32{partition}, at, committed)
	if err != nil {
		return 0, err
	}
	return l[partition], nil
}

// sendListOffsets sends req, for parts of topic, to their leader when the
// client knows it from what it consumes or produces, and they have one:
// that needs no Metadata request. Otherwise, or if the leader answers
// with an error (it may have moved), it sends req as a sharded request,
// which looks the leaders up (a Metadata request, cached for
// MetadataMinAge, 5 s) and retries. An agent lists its config partition
// at each heartbeat, 30 s apart: a Metadata request each time, to any
// broker, held a connection to every broker of a cluster open.
func sendListOffsets(ctx context.Context, cl *kgo.Client, topic string, parts []int32, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error) {
	if leader, ok := knownLeader(cl, topic, parts); ok {
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err == nil && !anyPartitionError(resp) {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return req.RequestWith(ctx, cl)
}

// knownLeader returns the one leader of parts the client knows without
// asking, if it knows one for each and it is the same.
func knownLeader(cl *kgo.Client, topic string, parts []int32) (int32, bool) {
	leader := int32(-1)
	for _, p := range parts {
		l, _, err := cl.PartitionLeader(topic, p)
		if err != nil || l < 0 || leader >= 0 && l != leader {
			return -1, false
		}
		leader = l
	}
	return leader, leader >= 0
}

func anyPartitionError(resp *kmsg.ListOffsetsResponse) bool {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return true
			}
		}
	}
	return false
}

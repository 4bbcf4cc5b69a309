// Package export writes events of the log as rows for data platforms: one
// row per event, its place in the log and its CloudEvents attributes as
// columns, its data as JSON, in JSON Lines, CSV or Parquet. It reads with
// direct assignment from a time to a time and keeps at most one poll and
// one Parquet row group in memory.
package export

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/parquet-go/parquet-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
)

// Row is one event as exported. Columns are named as the JSON fields.
type Row struct {
	Topic     string    `json:"topic" parquet:"topic,dict"`
	Partition int32     `json:"partition" parquet:"partition"`
	Offset    int64     `json:"offset" parquet:"offset"`
	LogTime   time.Time `json:"logtime" parquet:"logtime,timestamp(millisecond)"`
	Key       string    `json:"key" parquet:"key,dict"`
	// The CloudEvents attributes and Argosy's extensions.
	ID              string    `json:"id" parquet:"id"`
	Source          string    `json:"source" parquet:"source,dict"`
	Type            string    `json:"type" parquet:"type,dict"`
	SpecVersion     string    `json:"specversion" parquet:"specversion,dict"`
	Subject         string    `json:"subject" parquet:"subject"`
	Time            time.Time `json:"time" parquet:"time,timestamp(microsecond)"`
	DataContentType string    `json:"datacontenttype" parquet:"datacontenttype,dict"`
	DataSchema      string    `json:"dataschema" parquet:"dataschema,dict"`
	PartitionKey    string    `json:"partitionkey" parquet:"partitionkey,dict"`
	// DSSEMaterial is the signature envelope and Sig the compact
	// signature, whichever the event carries, for readers that verify.
	DSSEMaterial   string `json:"dssematerial" parquet:"dssematerial"`
	Sig            string `json:"sig" parquet:"sig"`
	SignedExtAttrs string `json:"signedextattrs" parquet:"signedextattrs,dict"`
	// Data is the event's data, JSON.
	Data json.RawMessage `json:"data" parquet:"data,json"`
}

// Columns are the rows' column names, in order: CSV's header.
var Columns = []string{"topic", "partition", "offset", "logtime", "key", "id", "source", "type", "specversion", "subject",
	"time", "datacontenttype", "dataschema", "partitionkey", "dssematerial", "sig", "signedextattrs", "data"}

// RowOf reads rec as a row. It returns false for a transaction marker. A
// record that is not a CloudEvent is an error.
//
// A CloudEvents 1.0 record in binary content mode, as Argosy writes every
// event, is read from its headers as they are, without building an event;
// any other record is read by the CloudEvents SDK.
func RowOf(ctx context.Context, rec *kgo.Record) (Row, bool, error) {
	if rec.Attrs.IsControl() {
		return Row{}, false, nil
	}
	r := Row{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, LogTime: rec.Timestamp.UTC(), Key: string(rec.Key)}
	var err error
	if binaryV1(rec) {
		err = r.readHeaders(rec)
	} else {
		err = r.readEvent(ctx, rec)
	}
	if err != nil {
		return Row{}, false, fmt.Errorf("%s/%d@%d: not a CloudEvent: %w", rec.Topic, rec.Partition, rec.Offset, err)
	}
	if len(r.Data) == 0 || !json.Valid(r.Data) {
		r.Data = nil
	}
	return r, true, nil
}

// binaryV1 tells whether rec is a CloudEvent 1.0 in binary content mode:
// a ce_specversion header of 1.0 and no structured content type.
func binaryV1(rec *kgo.Record) bool {
	v1 := false
	for _, h := range rec.Headers {
		switch {
		case h.Key == "ce_specversion":
			v1 = string(h.Value) == event.CloudEventsVersionV1
		case strings.EqualFold(h.Key, "content-type") && format.IsFormat(string(h.Value)):
			return false
		}
	}
	return v1
}

// readHeaders fills r from the ce_ headers, the content type and the value
// of a binary-mode record, as the CloudEvents Kafka binding maps them.
func (r *Row) readHeaders(rec *kgo.Record) error {
	sawKey := false
	for _, h := range rec.Headers {
		if strings.EqualFold(h.Key, "content-type") {
			r.DataContentType = string(h.Value)
			continue
		}
		name, ok := strings.CutPrefix(h.Key, "ce_")
		if !ok {
			continue
		}
		v := string(h.Value)
		switch strings.ToLower(name) {
		case "id":
			r.ID = v
		case "source":
			r.Source = v
		case "type":
			r.Type = v
		case "specversion":
			r.SpecVersion = v
		case "subject":
			r.Subject = v
		case "time":
			t, err := types.ParseTime(v)
			if err != nil {
				return fmt.Errorf("header %q: %w", h.Key, err)
			}
			r.Time = t.UTC()
		case "datacontenttype":
			r.DataContentType = v
		case "dataschema":
			r.DataSchema = v
		case events.ExtPartitionKey:
			r.PartitionKey, sawKey = v, true
		case events.ExtDSSEMaterial:
			r.DSSEMaterial = v
		case events.ExtSig:
			r.Sig = v
		case events.ExtSignedExtAttrs:
			r.SignedExtAttrs = v
		}
	}
	if !sawKey && rec.Key != nil {
		r.PartitionKey = string(rec.Key)
	}
	r.Data = rec.Value
	return nil
}

// readEvent fills r from the event the CloudEvents SDK reads from rec.
func (r *Row) readEvent(ctx context.Context, rec *kgo.Record) error {
	e, err := binding.ToEvent(ctx, events.NewMessage(rec))
	if err != nil {
		return err
	}
	ext := func(name string) string {
		v, ok := e.Extensions()[name]
		if !ok {
			return ""
		}
		return fmt.Sprint(v)
	}
	r.ID, r.Source, r.Type, r.SpecVersion, r.Subject, r.Time = e.ID(), e.Source(), e.Type(), e.SpecVersion(), e.Subject(), e.Time().UTC()
	r.DataContentType, r.DataSchema = e.DataContentType(), e.DataSchema()
	r.PartitionKey, r.DSSEMaterial, r.Sig, r.SignedExtAttrs = ext(events.ExtPartitionKey), ext(events.ExtDSSEMaterial), ext(events.ExtSig), ext(events.ExtSignedExtAttrs)
	r.Data = e.Data()
	return nil
}

// Writer writes rows in one format.
type Writer interface {
	Write(rows []Row) error
	// Close writes what is buffered and the format's footer; it does not
	// close the underlying writer.
	Close() error
}

// Formats are the formats NewWriter takes.
var Formats = []string{"jsonl", "csv", "parquet"}

// NewWriter returns a writer of format to w.
func NewWriter(format string, w io.Writer) (Writer, error) {
	switch format {
	case "jsonl":
		return newJSONL(w), nil
	case "csv":
		c := &csvWriter{w: csv.NewWriter(w)}
		return c, c.w.Write(Columns)
	case "parquet":
		return &parquetWriter{w: parquet.NewGenericWriter[Row](w, parquet.Compression(&parquet.Zstd),
			parquet.MaxRowsPerRowGroup(rowGroup))}, nil
	}
	return nil, fmt.Errorf("format %q: want one of %s", format, strings.Join(Formats, ", "))
}

// rowGroup bounds a Parquet row group, and so the rows held in memory.
const rowGroup = 64 << 10

type jsonl struct {
	w   io.Writer
	buf bytes.Buffer
	enc *json.Encoder
}

func newJSONL(w io.Writer) *jsonl {
	j := &jsonl{w: w}
	j.enc = json.NewEncoder(&j.buf)
	j.enc.SetEscapeHTML(false)
	return j
}

// Write encodes each row with encoding/json, its data left null, and puts
// the data, already valid JSON, in place of the null as it is, compacted
// only when it spans lines: a line per row.
func (j *jsonl) Write(rows []Row) error {
	j.buf.Reset()
	for _, r := range rows {
		data := r.Data
		r.Data = nil
		if err := j.enc.Encode(&r); err != nil {
			return err
		}
		if data == nil {
			continue
		}
		j.buf.Truncate(j.buf.Len() - len("null}\n"))
		if bytes.ContainsAny(data, "\r\n") {
			if err := json.Compact(&j.buf, data); err != nil {
				return err
			}
		} else {
			j.buf.Write(data)
		}
		j.buf.WriteString("}\n")
	}
	_, err := j.w.Write(j.buf.Bytes())
	return err
}

func (*jsonl) Close() error { return nil }

type csvWriter struct{ w *csv.Writer }

func (c *csvWriter) Write(rows []Row) error {
	for _, r := range rows {
		if err := c.w.Write([]string{r.Topic, strconv.Itoa(int(r.Partition)), strconv.FormatInt(r.Offset, 10),
			r.LogTime.Format(time.RFC3339Nano), r.Key, r.ID, r.Source, r.Type, r.SpecVersion, r.Subject, stamp(r.Time),
			r.DataContentType, r.DataSchema, r.PartitionKey, r.DSSEMaterial, r.Sig, r.SignedExtAttrs, string(r.Data)}); err != nil {
			return err
		}
	}
	return nil
}

func (c *csvWriter) Close() error {
	c.w.Flush()
	return c.w.Error()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

type parquetWriter struct{ w *parquet.GenericWriter[Row] }

func (p *parquetWriter) Write(rows []Row) error {
	_, err := p.w.Write(rows)
	return err
}

func (p *parquetWriter) Close() error { return p.w.Close() }

// Range is what to export: the records of topics appended from From
// (zero: the start) until To (exclusive; zero: the end each partition has
// when the export begins).
type Range struct {
	Topics   []string
	From, To time.Time
}

// Progress is how far an export has come.
type Progress struct {
	Records int64         `json:"records"`
	Total   int64         `json:"total"`
	Rows    int64         `json:"rows"`
	Skipped int64         `json:"skipped"`
	Elapsed time.Duration `json:"elapsed"`
	Done    bool          `json:"done"`
}

// Export writes the events of r to w, in offset order within each
// partition, reading with a client made from conn. Records that are not
// CloudEvents are skipped and logged to log. progress, if not nil, is
// called after every poll written and once at the end.
func Export(ctx context.Context, conn []kgo.Opt, r Range, w Writer, log *slog.Logger, progress func(Progress)) error {
	cl, err := kgo.NewClient(slices.Concat(conn, events.RangeConsumeOpts(), []kgo.Opt{kgo.FetchMaxBytes(16 << 20)})...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ranges, err := events.PlanRanges(ctx, kadm.NewClient(cl), r.Topics, events.Bounds{From: r.From, To: r.To})
	if err != nil {
		return err
	}
	reader, err := events.NewRangeReader(cl, ranges)
	if err != nil {
		return err
	}
	p := Progress{}
	for _, rg := range ranges {
		p.Total += rg.To - rg.From
	}
	began := time.Now()
	report := func() {
		p.Elapsed = time.Since(began)
		if progress != nil {
			progress(p)
		}
	}
	rows := make([]Row, 0, 1024)
	for {
		recs, err := reader.Poll(ctx, 10_000)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		rows = rowsOf(ctx, recs, rows[:0], &p, log)
		if err := w.Write(rows); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		p.Records, p.Rows = reader.Passed(), p.Rows+int64(len(rows))
		report()
	}
	p.Records, p.Done = reader.Passed(), true
	report()
	return nil
}

// rowsOf appends the rows of recs to rows, counting in p the records
// skipped and logging them to log.
func rowsOf(ctx context.Context, recs []*kgo.Record, rows []Row, p *Progress, log *slog.Logger) []Row {
	for _, rec := range recs {
		row, ok, err := RowOf(ctx, rec)
		if err != nil {
			p.Skipped++
			log.WarnContext(ctx, "record skipped", "err", err)
			continue
		}
		if ok {
			rows = append(rows, row)
		}
	}
	return rows
}

package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/internal/kafkaconn"
)

// RotateOptions are the flags of `argosy-hub rotate`.
type RotateOptions struct {
	IO          cmdkit.IOStreams
	Kafka       kafkaconn.Options
	TopicPrefix string
	HubKey      string
	NextHubKey  string
	SigForm     string
}

// NewCmdRotate returns `argosy-hub rotate`.
func NewCmdRotate(io cmdkit.IOStreams, runF func(context.Context, *RotateOptions) error) *cobra.Command {
	opts := &RotateOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Rotate the hub's signing key to a new one, on the trust topic",
		Long: `rotate appends the rotation of the hub's key (--hub-key) to its successor
(--next-hub-key) to the trust topic, signed by both keys. From the
rotation's place in the log on, every reader accepts hub events signed by
the successor and refuses those signed by the old key alone; the successor
signs trust events as the old key did. Readers keep the anchor they pinned
(the first hub.pub): the log carries the chain of rotations from it.

The steps, with no write refused along the way:
  1. argosy-hub keygen --dir ./hub-next
  2. restart every replica with --hub-key ./hub/hub.key --next-hub-key ./hub-next/hub.key:
     each event is then signed by both keys
  3. argosy-hub rotate --hub-key ./hub/hub.key --next-hub-key ./hub-next/hub.key
  4. restart every replica with --hub-key ./hub-next/hub.key --trust-anchor ./hub/hub.pub

A replica still signing with the old key alone after the rotation answers
every write with 503 and writes nothing. Rotating a key that was already
rotated is refused by every reader, and changes nothing.`,
		Example: `  argosy-hub rotate --kafka-brokers kafka:9092 --hub-key ./hub/hub.key --next-hub-key ./hub-next/hub.key`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			errs := []error{opts.Kafka.Validate()}
			if opts.HubKey == "" || opts.NextHubKey == "" {
				errs = append(errs, errors.New("--hub-key and --next-hub-key are required"))
			}
			if _, err := events.ParseSigForm(opts.SigForm); err != nil {
				errs = append(errs, fmt.Errorf("--sig-form: %w", err))
			}
			if err := errors.Join(errs...); err != nil {
				return &cmdkit.FlagError{Err: err}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return rotateRun(c.Context(), opts)
		},
	}
	fs := cmd.Flags()
	opts.Kafka.BindFlags(fs, "ARGOSY_")
	fs.StringVar(&opts.TopicPrefix, "topic-prefix", cmdkit.Env("ARGOSY_TOPIC_PREFIX", ""), "prefix of Argosy's topic names (env ARGOSY_TOPIC_PREFIX)")
	fs.StringVar(&opts.HubKey, "hub-key", cmdkit.Env("ARGOSY_HUB_PRIVATE_KEY", ""), "file of the hub's current signing key (env ARGOSY_HUB_PRIVATE_KEY)")
	fs.StringVar(&opts.NextHubKey, "next-hub-key", cmdkit.Env("ARGOSY_HUB_NEXT_PRIVATE_KEY", ""), "file of its successor, from argosy-hub keygen (env ARGOSY_HUB_NEXT_PRIVATE_KEY)")
	fs.StringVar(&opts.SigForm, "sig-form", cmdkit.Env("ARGOSY_SIG_FORM", events.SigCompact.String()),
		"the form the rotation is signed in: compact or dsse, as the hub's --sig-form (env ARGOSY_SIG_FORM)")
	return cmd
}

func rotateRun(ctx context.Context, o *RotateOptions) error {
	cur, err := LoadSigner(o.HubKey)
	if err != nil {
		return err
	}
	next, err := LoadSigner(o.NextHubKey)
	if err != nil {
		return err
	}
	conn, err := o.Kafka.Opts()
	if err != nil {
		return err
	}
	form, err := events.ParseSigForm(o.SigForm)
	if err != nil {
		return err
	}
	id, err := hub.RotateKey(ctx, conn, events.DefaultTopics(o.TopicPrefix), cur, next, events.WithSigForm(form))
	if err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "hub key %s rotated to %s (event %s)\nnow restart every replica with --hub-key %s --trust-anchor <the first hub.pub>\n",
		cur.KeyID(), next.KeyID(), id, o.NextHubKey)
	return nil
}

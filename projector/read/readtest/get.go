package readtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Get reads the JSON answer of the read API at url into a T: what the
// tests of the projector's own packages read the API with, since its
// client (hub/api) sits above them. A status other than 200 is an error
// with the answer's body.
func Get[T any](ctx context.Context, hc *http.Client, url string) (T, error) {
	var out T
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return out, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return out, fmt.Errorf("GET %s: %d %s (%w)", url, resp.StatusCode, b, err)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("GET %s: decoding the answer: %w", url, err)
	}
	return out, nil
}

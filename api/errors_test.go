package api

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/ingest"
)

// TestUploadFileSizeErrorsAre413: over HTTP, UploadFile's size errors
// answer as the error table says, 413 with Fleetscope-Error-Code
// too_large: an upload over the tenant's limit (ingest's ETOOLARGE, which
// the Connect protocol would answer 429 like a rate limit) and a message
// over the handler's read limit (Connect's own error, which had no
// fleetscope code at all). A rate limit stays 429.
func TestUploadFileSizeErrorsAre413(t *testing.T) {
	e := newPyroEnv(t)
	log := slog.New(slog.DiscardHandler)
	ing := &ingest.Service{DB: e.db, Log: log, TempDir: t.TempDir(), MaxUploadBytes: 4096}
	mux := http.NewServeMux()
	mux.Handle(fleetscopev1connect.NewIngestServiceHandler(NewIngest(ing, nil, "http://fleetscope.test", log),
		connect.WithInterceptors(ErrorInterceptor(log), NewAuth(e.db).Interceptor()), connect.WithReadMaxBytes(64<<10)))
	srv := httptest.NewServer(HTTPStatus(mux))
	t.Cleanup(srv.Close)

	upload := func(size int) (int, string, string) {
		t.Helper()
		data := []byte(strings.Repeat("main;f 1\n", size/9+1))
		body, err := proto.Marshal(&fsv1.UploadFileRequest{Metadata: &fsv1.UploadMetadata{App: "a"}, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", srv.URL+fleetscopev1connect.IngestServiceUploadFileProcedure, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/proto")
		req.Header.Set("Authorization", "Bearer "+e.key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get(CodeHeader), string(b)
	}
	for _, tc := range []struct {
		what string
		size int
		want string
	}{
		{"over the upload limit", 10_000, "larger than the limit of 4096 bytes"},
		{"over the message limit", 100_000, "larger than configured max"},
	} {
		status, code, body := upload(tc.size)
		if status != http.StatusRequestEntityTooLarge || code != fleetscope.ETOOLARGE || !strings.Contains(body, tc.want) {
			t.Errorf("%s: HTTP %d, %s %q, body %s; want 413, too_large, saying %q", tc.what, status, CodeHeader, code, body, tc.want)
		}
	}

	// A rate limit (the same Connect code) keeps its 429.
	limited := HTTPStatus(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		connect.NewErrorWriter().Write(w, r, ConnectError(fleetscope.Errorf(fleetscope.ERATELIMITED, "slow down")))
	}))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", fleetscopev1connect.IngestServiceUploadFileProcedure, nil)
	req.Header.Set("Content-Type", "application/proto")
	limited.ServeHTTP(rec, req)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get(CodeHeader) != fleetscope.ERATELIMITED {
		t.Errorf("a rate limit: HTTP %d, %s %q; want 429, rate_limited", rec.Code, CodeHeader, rec.Header().Get(CodeHeader))
	}
}

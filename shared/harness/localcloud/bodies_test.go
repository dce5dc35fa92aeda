package localcloud

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// slowAfterBody holds the transport's write goroutine after it wrote a
// request's body, as a busy process's scheduler may: the response comes
// in meanwhile, and the SDK closes the body before the goroutine is back.
type slowAfterBody struct{ net.Conn }

func (c slowAfterBody) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if !bytes.HasPrefix(p, []byte("POST ")) {
		time.Sleep(100 * time.Millisecond)
	}
	return n, err
}

// TestPlainRequestBodies_AResponseIsNotCutWhenTheBodyIsClosedEarly
// receives a message from a stand-in for the emulator that answers at
// once and sends its answer's end a moment later, through a transport
// whose write goroutine is late: without PlainRequestBodies the transport
// closes the connection under the answer and the SDK sends the
// ReceiveMessage again (the message the first answer carried would stay
// in flight until its visibility timeout); with it, one attempt.
func TestPlainRequestBodies_AResponseIsNotCutWhenTheBodyIsClosedEarly(t *testing.T) {
	body := `"Body":"` + strings.Repeat("x", 8<<10) + `"`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"Messages":[{"MessageId":"m1","ReceiptHandle":"h1",`)
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, body+`}]}`)
	}))
	defer srv.Close()
	attempts := func(adjust ...func(*aws.Config)) (int, error) {
		t.Helper()
		cfg := aws.Config{
			Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), BaseEndpoint: aws.String(srv.URL),
			HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
				tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return slowAfterBody{c}, nil
				}
			}),
		}
		for _, a := range adjust {
			a(&cfg)
		}
		out, err := sqs.NewFromConfig(cfg).ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(srv.URL + "/q")})
		if err != nil {
			return 0, err
		}
		if len(out.Messages) != 1 {
			t.Fatalf("%d messages, want 1", len(out.Messages))
		}
		res, _ := retry.GetAttemptResults(out.ResultMetadata)
		for i, r := range res.Results {
			if r.Err != nil {
				t.Logf("attempt %d: %v", i+1, r.Err)
			}
		}
		return len(res.Results), nil
	}
	if n, err := attempts(PlainRequestBodies); err != nil || n != 1 {
		t.Errorf("with PlainRequestBodies: the SDK sent the ReceiveMessage %d times (want once), error %v", n, err)
	}
	// Without it, the race: each attempt's answer is cut.
	if n, err := attempts(); err == nil && n == 1 {
		t.Logf("without PlainRequestBodies the ReceiveMessage went through at once: the race did not show (the SDK or net/http changed?)")
	} else {
		t.Logf("without PlainRequestBodies: %d attempts, %v", n, err)
	}
}

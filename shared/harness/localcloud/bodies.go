package localcloud

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// PlainRequestBodies makes the SDK's HTTP client send each request body
// as a plain io.ReadCloser, so that a connection is never closed under a
// response the emulator already sent (pass it to awsclients.Load or
// awsclients.ForEndpoint).
//
// The SDK (smithy-go's ClientHandler) closes a request's body as soon as
// the response's headers are in, while net/http's transport may still be
// finishing the request on its write goroutine: after the Content-Length
// bytes went out, it reads the body once more to check it is done. Its
// body is smithy-go's safe reader, whose WriteTo answers io.EOF once
// closed, and io.Copy hands that EOF on as an error; the transport takes
// it for a failed request write and closes the connection, cutting the
// response it is reading ("use of closed network connection"). The SDK
// retries that error: a ReceiveMessage that the emulator answered is sent
// again, and the messages the first answer carried stay in flight until
// their visibility timeout, a 60 s stall of the benchmark's pipeline
// (aws-sdk-go-v2 issue 2737 is the same race on DynamoDB). A body that
// only reads answers io.EOF from Read, which io.Copy takes as the end.
func PlainRequestBodies(cfg *aws.Config) {
	next := cfg.HTTPClient
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	cfg.HTTPClient = plainBodies{next}
}

type plainBodies struct{ next aws.HTTPClient }

func (c plainBodies) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = readCloser{r.Body}
	}
	return c.next.Do(r)
}

// readCloser hides every method of the body but Read and Close (WriteTo).
type readCloser struct{ rc io.ReadCloser }

func (b readCloser) Read(p []byte) (int, error) { return b.rc.Read(p) }
func (b readCloser) Close() error               { return b.rc.Close() }

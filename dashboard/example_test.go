package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/store/memstore"
)

// Mount the dashboard where only operators reach it. Its pages ask for the
// operator secret first.
func ExampleNew() {
	ctx := context.Background()
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		panic(err)
	}
	d, err := dashboard.New(svc, dashboard.Config{
		OperatorSecret: "an-operator-secret-of-32-bytes-at-least", // os.Getenv("CONSENTKIT_OPERATOR_SECRET")
		Videos:         retain.Dir{Root: "videos"},                // where the conversion worker keeps videos, for the player
	})
	if err != nil {
		panic(err)
	}
	admin := http.NewServeMux()
	admin.Handle("/dashboard/", d)
	srv := httptest.NewServer(admin)
	defer srv.Close()

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/dashboard/", "/dashboard/login"} {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Printf("%s %d location=%q\n", path, resp.StatusCode, resp.Header.Get("Location"))
	}
	// Output:
	// /dashboard/ 303 location="/dashboard/login?next=%2Fdashboard%2F"
	// /dashboard/login 200 location=""
}

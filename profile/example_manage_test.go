package profile_test

import (
	"context"
	"fmt"
	"log"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/store/memstore"
)

// A buyer keeps its rules as a named profile; a verification names it
// ("profile": "strict") to be graded by it.
func ExampleProfiles() {
	ctx := context.Background()
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "buyer", Name: "Lead Buyer"}); err != nil {
		log.Fatal(err)
	}
	profiles := profile.Profiles{Service: svc}
	_, err = profiles.Put(ctx, "buyer", "strict", profile.Rules{
		BrandNames:   &profile.BrandNamesRule{Names: []string{"Acme"}},
		OptInMethods: &profile.OptInMethodsRule{Allowed: []string{consent.OptInManual}, Miss: profile.Miss{OnMiss: profile.MissWarn}},
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = profiles.Put(ctx, "buyer", "nameless", profile.Rules{})
	fmt.Println(consent.ErrorCode(err))
	list, err := profiles.List(ctx, "buyer")
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range list {
		fmt.Println(p.Name, p.Rules.OptInMethods.OnMiss)
	}
	// Output:
	// invalid
	// strict warn
}

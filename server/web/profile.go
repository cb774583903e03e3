package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/superfluid/superfluid/server/people"
)

// PasswordChange is the body of PUT /api/profile/password.
type PasswordChange struct {
	CurrentPassword string `json:"current_password" required:"true" minLength:"1" maxLength:"1024"`
	NewPassword     string `json:"new_password" required:"true" minLength:"8" maxLength:"1024"`
}

func (a *API) profileRoutes() {
	Handle(a, http.MethodGet, "/api/profile", Meta{Summary: "Your profile", Tag: "profile", Access: SignedIn},
		func(r *Request[NoBody]) (User, error) {
			p, err := r.Caller.person()
			return UserOf(p), err
		})
	Handle(a, http.MethodPut, "/api/profile/password", Meta{Summary: "Change your password (your other sessions end)", Tag: "profile", Access: SignedIn},
		a.changePassword)
}

// changePassword checks the current password (failures count toward the sign-in lockout, so a
// stolen session cannot guess it), sets the new one, ends every other session of the person
// and gives this one a new id (the reply's cookie; its CSRF token is new too: GET
// /api/auth/me).
func (a *API) changePassword(r *Request[PasswordChange]) (NoBody, error) {
	p, err := r.Caller.person()
	if err != nil {
		return NoBody{}, err
	}
	ctx, address := r.Ctx, r.Gin.ClientIP()
	defer a.attempts.lockAttempt(p.Name, address)()
	wait, locked, err := a.cfg.Sessions.Locked(ctx, p.Name, address)
	if err != nil {
		return NoBody{}, err
	}
	if locked {
		return NoBody{}, &Error{Status: http.StatusTooManyRequests, Code: "too_many_attempts", RetryAfter: wait,
			Message: "too many failed sign-ins; try again in " + wait.Round(time.Second).String()}
	}
	if _, err := a.cfg.People.Verify(ctx, p.Name, r.Body.CurrentPassword); errors.Is(err, people.ErrWrongPassword) {
		if err := a.cfg.Sessions.Fail(ctx, p.Name, address); err != nil {
			return NoBody{}, err
		}
		return NoBody{}, Errorf(http.StatusBadRequest, "wrong_password", "current_password", "current_password: wrong password")
	} else if err != nil {
		return NoBody{}, err
	}
	if _, err := a.cfg.People.SetPassword(ctx, people.ActorOf(callerIdentity(ctx)), p.ID, r.Body.NewPassword); err != nil {
		if errors.Is(err, people.ErrInvalid) {
			return NoBody{}, &Error{Status: http.StatusBadRequest, Code: "invalid_body", Param: "new_password", Message: "new_password: " + err.Error()}
		}
		return NoBody{}, err
	}
	if _, err := a.cfg.Sessions.EndPerson(ctx, p.ID, ""); err != nil {
		return NoBody{}, err
	}
	if r.Caller.Session != "" {
		id, _, err := a.cfg.Sessions.Create(ctx, p.ID)
		if err != nil {
			return NoBody{}, err
		}
		a.setCookie(r.Gin, id)
	}
	return NoBody{}, nil
}

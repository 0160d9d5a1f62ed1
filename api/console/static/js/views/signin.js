// Sign-in: one form per method of SIGN_IN_METHODS (session.js): e-mail and password
// first, then an API key; above them a "Sign in with ..." button when the tenant typed
// has an OpenID Connect provider (GET /v1/auth/oidc/{tenant}).

import {busy, clearProblem, h, showProblem} from '../dom.js';
import {SIGN_IN_METHODS, rememberedTenant} from '../session.js';

function methodForm(app, method, done) {
  const problems = h('div', {class: 'problems', hidden: true});
  const inputs = method.fields.map((field) => h('input', {
    id: `${method.id}-${field.name}`, name: field.name, type: field.type ?? 'text',
    autocomplete: field.autocomplete, pattern: field.pattern, spellcheck: field.spellcheck,
    required: true, 'aria-describedby': `${method.id}-help`,
    value: field.remembered ? rememberedTenant() : null,
  }));
  const form = h('form', {class: 'sign-in', 'aria-labelledby': `${method.id}-title`, novalidate: true},
    h('h2', {id: `${method.id}-title`}, method.title),
    h('p', {id: `${method.id}-help`, class: 'help'}, method.help),
    method.fields.map((field, i) => h('div', {class: 'field'},
      h('label', {for: inputs[i].id}, field.label), inputs[i])),
    problems,
    h('button', {type: 'submit', class: 'primary'}, method.submit));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearProblem(problems);
    const values = Object.fromEntries(method.fields.map((f, i) => [f.name, inputs[i].value]));
    const invalid = inputs.find((input) => !input.value.trim() || !input.checkValidity());
    if (invalid) {
      showProblem(problems, {problem: {title: 'Check the form',
        detail: `${method.fields[inputs.indexOf(invalid)].label} is missing or not in the ` +
          'expected form.'}});
      invalid.focus();
      return;
    }
    try {
      await busy(form, () => app.session.signIn(method, values, app.api));
      done();
    } catch (error) {
      showProblem(problems, error, 'Not signed in');
      inputs[0].focus();
    }
  });
  return {form, first: inputs[0]};
}

/** The tenant's "Sign in with ..." link, shown while the tenant field names a tenant
 * with an OpenID Connect provider. */
function providerButton(tenantInput) {
  const link = h('a', {class: 'button primary oidc', hidden: true});
  let asked = '';
  const ask = async () => {
    const tenant = tenantInput.value.trim();
    if (tenant === asked) return;
    asked = tenant;
    link.hidden = true;
    if (!tenant || !tenantInput.checkValidity()) return;
    try {
      const r = await fetch(`/v1/auth/oidc/${encodeURIComponent(tenant)}`,
                            {cache: 'no-store', redirect: 'error'});
      if (!r.ok || asked !== tenant) return;
      const button = await r.json();
      if (!button.start_url) return;
      link.textContent = `Sign in with ${button.label}`;
      link.href = button.start_url;
      link.hidden = false;
    } catch {
      // No provider to offer: the password form stays.
    }
  };
  tenantInput.addEventListener('change', ask);
  ask();
  return link;
}

export function signInView(app, done) {
  const forms = SIGN_IN_METHODS.map((method) => methodForm(app, method, done));
  const tenantInput = forms[0].form.querySelector('input[name="tenant"]');
  const notice = app.session.notice;
  const element = h('section', {class: 'sign-in-page', 'aria-labelledby': 'sign-in-title'},
    h('h1', {id: 'sign-in-title', tabindex: -1}, 'Sign in to the helpdesk console'),
    notice ? h('div', {class: 'notice'},
      h('p', null, 'You were signed out: the API refused the credential.'),
      h('p', null, h('strong', null, notice.problem?.title ?? 'Error'),
        `: ${notice.problem?.detail ?? ''}`))
      : null,
    tenantInput ? providerButton(tenantInput) : null,
    forms.map((f) => f.form),
    h('p', {class: 'help'},
      'On the embedded server, the demo\u2019s tenants, people\u2019s e-mails and ' +
      'passwords, and keys are printed at start-up. What you see here depends on your ' +
      'role.'));
  // With the tenant known, the cursor waits in the e-mail field.
  const first = forms[0];
  const focus = () => (first?.first.value
    ? first.form.querySelector('input[name="email"]') : first?.first)?.focus();
  return {element, title: 'Sign in', focus};
}

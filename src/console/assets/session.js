// The mailsift console: signing in and out, and the start. Loaded last, after
// console.js and every page's script: at the start it asks for the session
// (/api/session) and, signed in, shows the page the URL names.
'use strict';

function signedIn(s) {
  state.account = s.account; state.role = s.role; state.csrf = s.csrf;
  text('who-name', s.account); text('who-role', s.role);
  $('nav').hidden = false; $('who').hidden = false;
  document.body.classList.toggle('viewer', s.role !== 'admin');
  if (location.pathname === '/login' || location.pathname === '/') history.replaceState({}, '', '/status');
  route();
}

function signedOut() {
  state.account = state.role = state.csrf = null;
  $('nav').hidden = true; $('who').hidden = true;
  $('login-name').value = ''; $('login-password').value = '';  // the next person starts blank
  show('login');
}

document.addEventListener('DOMContentLoaded', async () => {
  $('login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    text('login-error', '');
    try {
      const s = await api('/api/login', {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: $('login-name').value, password: $('login-password').value }),
      });
      $('login-password').value = '';
      signedIn(s);
    } catch (e) { text('login-error', e.message); }
  });
  $('sign-out').addEventListener('click', async () => { try { await api('/api/logout', { method: 'POST' }); } catch (e) { /* signed out anyway */ } signedOut(); history.pushState({}, '', '/login'); });
  try { signedIn(await api('/api/session')); } catch (e) { signedOut(); }
});

// The connect page: an end user picks one of the integrations their connect session allows and
// completes its auth flow. Plain DOM code, no framework; every text from the server goes through
// textContent, never innerHTML. Speaks @nangohq/frontend's Connect UI protocol to a parent frame
// ("ready" → {type:'session_token'}; "connect", "error", "close" events).
//
// This file, loaded last, lists the integrations the link allows and starts the page; connect-shell.js
// holds the settings, state, API client and DOM plumbing, connect-form.js one integration's form and its
// flows.
(function () {
  'use strict';

  var page = window.SwitchboardConnect;
  var query = page.query;
  var ALLOWED_ORIGINS = page.ALLOWED_ORIGINS;
  var TOKEN_KEY = page.TOKEN_KEY;
  var app = page.app;
  var embedded = page.embedded;
  var closable = page.closable;
  var state = page.state;
  var el = page.el;
  var emit = page.emit;
  var api = page.api;
  var closeControl = page.closeControl;
  var requestClose = page.requestClose;
  var show = page.show;
  var showFatal = page.showFatal;
  var showIntegration = page.showIntegration;

  var MODE_LABELS = {
    OAUTH2: 'Sign in with your account',
    OAUTH1: 'Sign in with your account',
    APP: 'Install the app',
    CUSTOM: 'Install the app',
    API_KEY: 'API key',
    BASIC: 'Username and password',
    OAUTH2_CC: 'Client credentials',
    TBA: 'Token-based authentication',
    JWT: 'Signing key',
    TWO_STEP: 'API credentials',
    BILL: 'Bill login',
    SIGNATURE: 'API user and secret',
  };

  // ---- the list ---------------------------------------------------------------------------------

  function showList() {
    var reconnecting = state.session.isReconnecting === true;
    var items = state.integrations.map(function (item) {
      return el('li', {}, [
        el(
          'button',
          {
            type: 'button',
            class: 'integration',
            'data-integration': item.unique_key,
            onclick: function () {
              showIntegration(item);
            },
          },
          [
            el('img', { src: item.logo, alt: '', width: '36', height: '36' }),
            el('span', {}, [
              el('span', { class: 'name', text: item.display_name }),
              el('span', {
                class: 'mode',
                text: MODE_LABELS[item.provider.auth_mode] || item.provider.auth_mode,
              }),
            ]),
          ],
        ),
      ]);
    });
    show([
      el('h1', { text: reconnecting ? 'Reconnect your account' : 'Connect an account' }),
      el('p', {
        class: 'muted',
        text: items.length
          ? 'Choose the service to connect.'
          : 'There is nothing to connect in this session.',
      }),
      el('ul', { class: 'integrations', 'aria-label': 'Integrations' }, items),
    ]);
  }

  page.showList = showList;

  // ---- start ------------------------------------------------------------------------------------

  if (closable) {
    // The loading screen too.
    app.insertBefore(closeControl(), app.firstChild);
    document.addEventListener('keydown', function (event) {
      if (event.key === 'Escape' && !event.defaultPrevented) requestClose();
    });
  }
  // Inside the SDK's frame the dimmed customer page around the card is ours: a click there closes.
  if (embedded) document.getElementById('overlay').addEventListener('click', requestClose);

  function load() {
    return Promise.all([api('GET', '/connect/session'), api('GET', '/integrations')])
      .then(function (results) {
        state.session = results[0].data;
        var integrations = results[1].data;
        return Promise.all(
          integrations.map(function (integration) {
            return api('GET', '/providers/' + encodeURIComponent(integration.provider)).then(function (res) {
              integration.provider = res.data;
              return integration;
            });
          }),
        );
      })
      .then(function (integrations) {
        state.integrations = integrations;
        // A successful full-page authorization never gets here: its session has ended (see the start below).
        if (query.get('oauth_result') === 'error') {
          showList();
          app.insertBefore(
            el('p', {
              class: 'alert',
              role: 'alert',
              text:
                'The authorization did not complete (' +
                (query.get('error_type') || 'unknown error') +
                '). Please try again.',
            }),
            app.children[1] || null,
          );
          return;
        }
        if (integrations.length === 1) showIntegration(integrations[0]);
        else showList();
      })
      .catch(function (error) {
        if (
          error.code === 'unknown_connect_session_token' ||
          error.code === 'invalid_connect_session_token_format'
        ) {
          showFatal('This link has expired', 'Ask for a new link to connect your account.');
        } else {
          showFatal('Something went wrong', error.message || String(error));
        }
        emit('error', {
          errorType: error.code || 'unknown_error',
          errorMessage: error.message || String(error),
        });
      });
  }

  function begin(token) {
    state.token = token;
    load();
  }

  var fromLink = query.get('session_token');
  var stored = null;
  try {
    stored = window.sessionStorage.getItem(TOKEN_KEY);
  } catch (e) {
    stored = null;
  }
  if (fromLink) {
    begin(fromLink);
  } else if (query.get('oauth_result') === 'success') {
    // Back from a full-page authorization: the connection is stored and its session has ended (the token no
    // longer works), so the outcome in the URL is all there is to show.
    try {
      window.sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) {
      /* storage disabled */
    }
    var name = query.get('display_name');
    emit('connect', {
      providerConfigKey: query.get('provider_config_key'),
      connectionId: query.get('connection_id'),
    });
    show([
      el('p', { class: 'success-mark', 'aria-hidden': 'true', text: '✓' }),
      el('h1', { text: name ? name + ' is connected' : 'Your account is connected' }),
      el('p', { class: 'muted', text: 'You can close this window now.' }),
    ]);
  } else if (stored && query.get('oauth_result')) {
    begin(stored);
  } else if (query.get('oauth_result') === 'error') {
    showFatal('The connection failed', 'Please go back and try again.');
  } else if (embedded) {
    // Inside @nangohq/frontend's iframe the parent hands the token over once we say we are ready.
    window.addEventListener('message', function onToken(event) {
      if (event.source !== window.parent || ALLOWED_ORIGINS.indexOf(event.origin) === -1) return;
      if (!event.data || event.data.type !== 'session_token') return;
      window.removeEventListener('message', onToken);
      begin(String(event.data.sessionToken || ''));
    });
    emit('ready');
  } else {
    showFatal(
      'This link is incomplete',
      'The link is missing its session token. Ask for a new link to connect your account.',
    );
  }
})();

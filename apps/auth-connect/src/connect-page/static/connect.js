// The connect page: an end user picks one of the integrations their connect session allows and
// completes its auth flow. Plain DOM code, no framework; every text from the server goes through
// textContent, never innerHTML. Speaks @nangohq/frontend's Connect UI protocol to a parent frame
// ("ready" → {type:'session_token'}; "connect", "error", "close" events).
(function () {
  'use strict';

  var query = new URLSearchParams(window.location.search);
  var API_URL = (
    document.querySelector('meta[name="switchboard-api-url"]').getAttribute('content') || ''
  ).replace(/\/$/, '');
  var API_ORIGIN = new URL(API_URL).origin;
  // @nangohq/frontend's `apiURL` (always sent: the SDK defaults it to Nango's cloud). Taken only on this
  // deployment's own API origin (e.g. behind a path prefix): the session token goes to it, and the page's
  // CSP allows no other.
  (function () {
    var requested = query.get('apiURL');
    if (!requested) return;
    try {
      var url = new URL(requested);
      if (url.origin === API_ORIGIN && (url.protocol === 'https:' || url.protocol === 'http:'))
        API_URL = url.href.replace(/\/$/, '');
    } catch (e) {
      /* not a URL: keep the configured one */
    }
  })();
  // The customer's origins (SWITCHBOARD_CONNECT_ALLOWED_ORIGINS): the only parents or openers that receive
  // this page's events or may hand it a session token.
  var ALLOWED_ORIGINS = (
    document.querySelector('meta[name="switchboard-allowed-origins"]').getAttribute('content') || ''
  )
    .split(' ')
    .filter(Boolean);
  var TOKEN_KEY = 'switchboard_connect_session_token';
  var app = document.getElementById('app');
  var embedded = window.parent !== window;
  // Only a frame or a popup can be closed by the page; a plain tab is closed by the user.
  var closable = embedded || !!window.opener;
  // @nangohq/frontend's `detectClosedAuthWindow`: some providers' pages make a popup look closed while it
  // is open, so inside the SDK's frame a closed popup counts only when the customer asked for it.
  var DETECT_CLOSED_POPUP = !embedded || query.get('detectClosedAuthWindow') === 'true';
  if (embedded) document.documentElement.classList.add('embedded');

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
  var REDIRECT_MODES = ['OAUTH2', 'OAUTH1', 'APP', 'CUSTOM'];
  var FORM_ROUTES = {
    API_KEY: '/api-auth/api-key/',
    BASIC: '/api-auth/basic/',
    OAUTH2_CC: '/oauth2/auth/',
    TBA: '/auth/tba/',
    JWT: '/auth/jwt/',
    TWO_STEP: '/auth/two-step/',
    BILL: '/auth/bill/',
    SIGNATURE: '/auth/signature/',
  };

  var state = { token: null, session: null, integrations: [] };

  // ---- plumbing ---------------------------------------------------------------------------------

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === undefined || value === null || value === false) return;
      if (key === 'text') node.textContent = value;
      else if (key.indexOf('on') === 0) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? '' : value);
    });
    (children || []).forEach(function (child) {
      if (child) node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    });
    return node;
  }

  function emit(type, payload) {
    var message = payload === undefined ? { type: type } : { type: type, payload: payload };
    // One post per allowed origin: the browser delivers only the one matching the receiver's origin.
    ALLOWED_ORIGINS.forEach(function (origin) {
      if (embedded) window.parent.postMessage(message, origin);
      if (window.opener && window.opener !== window) {
        try {
          window.opener.postMessage(message, origin);
        } catch (e) {
          /* the opener went away */
        }
      }
    });
  }

  function ApiError(status, body) {
    var error = (body && body.error) || {};
    this.status = status;
    this.code = error.code || 'unknown_error';
    this.message = error.message || 'Something went wrong (HTTP ' + status + ')';
    this.errors = error.errors || [];
  }

  function api(method, path, body) {
    var headers = { authorization: 'Bearer ' + state.token };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return fetch(API_URL + path, {
      method: method,
      headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(
      function (res) {
        return res.text().then(function (text) {
          var parsed = null;
          try {
            parsed = text ? JSON.parse(text) : null;
          } catch (e) {
            parsed = null;
          }
          if (!res.ok) throw new ApiError(res.status, parsed);
          return parsed;
        });
      },
      function () {
        throw new ApiError(0, {
          error: {
            code: 'network_error',
            message: 'Could not reach the server. Check your connection and try again.',
          },
        });
      },
    );
  }

  function withToken(path) {
    return (
      path +
      (path.indexOf('?') === -1 ? '?' : '&') +
      'connect_session_token=' +
      encodeURIComponent(state.token)
    );
  }

  function paramsQuery(params) {
    return Object.keys(params)
      .filter(function (key) {
        return params[key] !== '';
      })
      .map(function (key) {
        return '&' + encodeURIComponent('params[' + key + ']') + '=' + encodeURIComponent(params[key]);
      })
      .join('');
  }

  function closeControl() {
    return el('button', {
      type: 'button',
      class: 'close-x',
      'aria-label': 'Close',
      title: 'Close',
      text: '×',
      onclick: requestClose,
    });
  }

  /** Tells the customer's page (the SDK's frame, or the opener) to close us, as Nango's Connect UI does. */
  function requestClose() {
    emit('close');
    if (!embedded && window.opener) window.close();
  }

  function show(nodes, focusHeading) {
    var screen = nodes.filter(function (node) {
      return node;
    });
    // Every screen can be left: the SDK's frame covers the customer's whole page until we post "close".
    if (closable) screen.unshift(closeControl());
    app.replaceChildren.apply(app, screen);
    app.setAttribute('aria-busy', 'false');
    var heading = app.querySelector('h1');
    if (heading && focusHeading !== false) {
      heading.setAttribute('tabindex', '-1');
      heading.focus();
    }
  }

  // ---- views ------------------------------------------------------------------------------------

  function showFatal(title, message) {
    show([
      el('h1', { text: title }),
      el('p', { class: 'alert', role: 'alert', text: message }),
      el('div', { class: 'actions' }, [closeButton('Close')]),
    ]);
  }

  function closeButton(label) {
    return el('button', {
      type: 'button',
      class: 'secondary',
      text: label,
      onclick: requestClose,
    });
  }

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

  function docsLink(item) {
    var overrides = state.session.overrides || {};
    var override = overrides[item.unique_key] && overrides[item.unique_key].docs_connect;
    var href = override || item.provider.docs_connect || item.provider.docs;
    if (!href || !/^https?:\/\//i.test(href)) return null;
    return el('p', { class: 'docs' }, [
      el('a', {
        href: href,
        target: '_blank',
        rel: 'noopener noreferrer',
        text: 'How to connect ' + item.display_name + ' (opens in a new tab)',
      }),
    ]);
  }

  function sessionConnectionConfig(item) {
    var defaults = (state.session.integrations_config_defaults || {})[item.unique_key];
    return (defaults && defaults.connection_config) || {};
  }

  /** The input fields for one integration: connection config the user fills in, then its credentials. */
  function fieldsFor(item) {
    var provider = item.provider;
    var preset = sessionConnectionConfig(item);
    var fields = [];
    var config = provider.connection_config || {};
    Object.keys(config)
      .map(function (name) {
        return { name: name, spec: config[name] };
      })
      .filter(function (f) {
        return !f.spec.automated && !f.spec.hidden && preset[f.name] === undefined;
      })
      .sort(function (a, b) {
        return (a.spec.order || 0) - (b.spec.order || 0);
      })
      .forEach(function (f) {
        fields.push({
          group: 'params',
          name: f.name,
          label: f.spec.title || f.name,
          hint: f.spec.description,
          placeholder: f.spec.example,
          prefix: f.spec.prefix,
          suffix: f.spec.suffix,
          value: f.spec.default_value,
          optional: f.spec.optional,
          secret: f.spec.secret,
          pattern: f.spec.pattern,
        });
      });
    var creds = provider.credentials || {};
    function credential(name, fallbackLabel, secret, optional) {
      var spec = creds[name] || {};
      fields.push({
        group: 'body',
        name: name,
        label: spec.title || fallbackLabel,
        hint: spec.description,
        placeholder: spec.example,
        secret: secret,
        optional: optional,
      });
    }
    switch (provider.auth_mode) {
      case 'API_KEY':
        credential('apiKey', 'API key', true);
        break;
      case 'BASIC':
        credential('username', 'Username', false);
        credential('password', 'Password', true, creds.password && creds.password.optional);
        break;
      case 'OAUTH2_CC':
        credential('client_id', 'Client ID', false);
        credential('client_secret', 'Client secret', true);
        // Mutual TLS (ADP): the pair goes with the connection and is never shown again, so password fields.
        if (provider.mutual_tls) {
          fields.push({
            group: 'body',
            name: 'client_certificate',
            label: 'Client certificate (PEM)',
            hint: 'The certificate your provider issued for this app, from -----BEGIN CERTIFICATE-----.',
            secret: true,
          });
          fields.push({
            group: 'body',
            name: 'client_private_key',
            label: 'Client private key (PEM)',
            hint: 'The private key of that certificate, from -----BEGIN PRIVATE KEY-----.',
            secret: true,
          });
        }
        break;
      case 'TBA':
        credential('token_id', 'Token ID', false);
        credential('token_secret', 'Token secret', true);
        break;
      case 'JWT':
      case 'TWO_STEP':
        // The provider's own credential form (a private key, a consumer token, ...).
        Object.keys(creds).forEach(function (name) {
          var spec = creds[name];
          if (spec.automated) return;
          credential(name, name, !!spec.secret, !!spec.optional);
        });
        break;
      case 'BILL':
        credential('username', 'Username', false);
        credential('password', 'Password', true);
        credential('organization_id', 'Organization ID', false);
        credential('dev_key', 'Developer key', true);
        break;
      case 'SIGNATURE':
        credential('username', 'Username', false);
        credential('password', 'Password', true);
        break;
      default:
        // An empty override in the session means the end user brings their own OAuth app.
        if (preset.oauth_client_id_override === '' || preset.oauth_client_secret_override === '') {
          fields.push({
            group: 'client',
            name: 'oauth_client_id_override',
            label: 'Your OAuth app client ID',
          });
          fields.push({
            group: 'client',
            name: 'oauth_client_secret_override',
            label: 'Your OAuth app client secret',
            secret: true,
          });
        }
    }
    return fields;
  }

  function showIntegration(item) {
    var mode = item.provider.auth_mode;
    var redirect = REDIRECT_MODES.indexOf(mode) !== -1;
    var supported = redirect || FORM_ROUTES[mode];
    var fields = fieldsFor(item);
    var alert = el('div', { class: 'alert', role: 'alert', id: 'form-error' });
    var inputs = {};
    var formChildren = fields.map(function (field) {
      var id = 'field-' + field.group + '-' + field.name;
      var hintId = field.hint ? id + '-hint' : null;
      var errorId = id + '-error';
      var input = el('input', {
        id: id,
        name: field.name,
        type: field.secret ? 'password' : 'text',
        autocomplete: field.secret ? 'off' : 'on',
        spellcheck: 'false',
        required: !field.optional,
        placeholder: field.placeholder,
        value: field.value,
        'aria-describedby': [hintId, errorId].filter(Boolean).join(' '),
      });
      inputs[field.group + ':' + field.name] = { input: input, errorNode: null, field: field };
      var errorNode = el('span', { class: 'field-error', id: errorId });
      inputs[field.group + ':' + field.name].errorNode = errorNode;
      var labelText = field.label + (field.optional ? ' (optional)' : '');
      var affixed =
        field.prefix || field.suffix
          ? labelText + ' — ' + (field.prefix || '') + '…' + (field.suffix || '')
          : labelText;
      return el('label', { for: id }, [
        affixed,
        field.hint ? el('span', { class: 'hint', id: hintId, text: field.hint }) : null,
        input,
        errorNode,
      ]);
    });
    var submit = el('button', {
      type: 'submit',
      class: 'primary',
      text: redirect ? 'Connect with ' + item.display_name : 'Connect',
    });
    var actions = el('div', { class: 'actions' }, [
      submit,
      state.integrations.length > 1
        ? el('button', { type: 'button', class: 'secondary', text: 'Back', onclick: showList })
        : closeButton('Cancel'),
    ]);
    var form = el(
      'form',
      { novalidate: true, 'aria-describedby': 'form-error' },
      formChildren.concat([actions]),
    );
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      run(item, inputs, alert, submit);
    });
    show([
      el('div', { class: 'heading' }, [
        el('img', { class: 'heading-logo', src: item.logo, alt: '', width: '36', height: '36' }),
        el('h1', { text: 'Connect ' + item.display_name }),
      ]),
      docsLink(item),
      alert,
      supported
        ? form
        : el('p', {
            class: 'alert',
            role: 'alert',
            text: item.display_name + ' uses ' + mode + ', which this page cannot connect yet.',
          }),
    ]);
    var first = form.querySelector('input');
    if (first) first.focus();
  }

  function collect(inputs, alert) {
    var values = { params: {}, body: {}, client: {} };
    var missing = null;
    Object.keys(inputs).forEach(function (key) {
      var entry = inputs[key];
      entry.errorNode.textContent = '';
      entry.input.removeAttribute('aria-invalid');
      var value = entry.field.secret ? entry.input.value : entry.input.value.trim();
      if (!value && !entry.field.optional) {
        entry.errorNode.textContent = entry.field.label + ' is required.';
        entry.input.setAttribute('aria-invalid', 'true');
        missing = missing || entry.input;
      }
      if (value) values[entry.field.group][entry.field.name] = value;
    });
    alert.textContent = '';
    if (missing) {
      alert.textContent = 'Please fill in the required fields.';
      missing.focus();
      return null;
    }
    return values;
  }

  /** Puts the server's per-field errors next to the fields they name, and the message on top. */
  function showServerError(error, inputs, alert) {
    alert.textContent = error.message;
    var focused = false;
    (error.errors || []).forEach(function (fieldError) {
      var path = fieldError.path || [];
      var name = path[path.length - 1];
      Object.keys(inputs).forEach(function (key) {
        var entry = inputs[key];
        if (entry.field.name === name) {
          entry.errorNode.textContent = fieldError.message;
          entry.input.setAttribute('aria-invalid', 'true');
          if (!focused) {
            entry.input.focus();
            focused = true;
          }
        }
      });
    });
    if (!focused) {
      // A refused key or password: back to the first credential field, ready to retype (the alert is announced).
      var retry = Object.keys(inputs)
        .map(function (key) {
          return inputs[key];
        })
        .filter(function (entry) {
          return entry.field.group !== 'params';
        })[0];
      if (retry && (error.code === 'connection_test_failed' || error.code === 'invalid_credentials')) {
        retry.input.setAttribute('aria-invalid', 'true');
        retry.input.select();
        retry.input.focus();
      } else {
        alert.setAttribute('tabindex', '-1');
        alert.focus();
      }
    }
    emit('error', { errorType: error.code, errorMessage: error.message });
  }

  function run(item, inputs, alert, submit) {
    var values = collect(inputs, alert);
    if (!values) return;
    var mode = item.provider.auth_mode;
    submit.disabled = true;
    var done = function () {
      submit.disabled = false;
    };
    if (REDIRECT_MODES.indexOf(mode) !== -1) {
      runRedirect(item, values, alert, inputs).then(done, done);
      return;
    }
    var path =
      withToken(FORM_ROUTES[mode] + encodeURIComponent(item.unique_key)) + paramsQuery(values.params);
    api('POST', path, values.body).then(
      function (result) {
        showSuccess(item, result.connectionId);
      },
      function (error) {
        done();
        showServerError(error, inputs, alert);
      },
    );
  }

  /**
   * OAuth and app installs happen at the provider. The popup is opened synchronously (popup blockers
   * allow only that), then sent to the provider once the server has prepared the flow. Without a popup
   * the whole page goes there, and the result page brings the browser back here.
   */
  function runRedirect(item, values, alert, inputs) {
    var popup = window.open('', 'switchboard-connect', 'popup,width=520,height=680');
    var body = { params: values.params };
    if (Object.keys(values.client).length) body.credentials = values.client;
    return api('POST', withToken('/oauth/connect/' + encodeURIComponent(item.unique_key)), body).then(
      function (started) {
        if (!popup || popup.closed) {
          try {
            window.sessionStorage.setItem(TOKEN_KEY, state.token);
          } catch (e) {
            /* storage disabled: the result page still shows the outcome */
          }
          window.location.assign(started.url);
          return new Promise(function () {});
        }
        popup.location.href = started.url;
        return waitForPopup(popup).then(
          function (result) {
            showSuccess(item, result.connectionId);
          },
          function (error) {
            showServerError(error, inputs, alert);
          },
        );
      },
      function (error) {
        if (popup) popup.close();
        showServerError(error, inputs, alert);
      },
    );
  }

  function waitForPopup(popup) {
    return new Promise(function (resolve, reject) {
      var finished = false;
      function finish() {
        finished = true;
        window.removeEventListener('message', onMessage);
        clearInterval(timer);
      }
      function onMessage(event) {
        if (event.origin !== API_ORIGIN || !event.data || typeof event.data.type !== 'string') return;
        if (event.data.type === 'nango_oauth_callback_success') {
          finish();
          try {
            popup.postMessage({ type: 'nango_oauth_callback_ack' }, API_ORIGIN);
          } catch (e) {
            /* already closed */
          }
          resolve({ connectionId: event.data.connectionId, providerConfigKey: event.data.providerConfigKey });
        } else if (event.data.type === 'nango_oauth_callback_error') {
          finish();
          var payload = event.data.payload || {};
          reject({
            code: payload.errorType || 'unknown_error',
            message: payload.message || 'The authorization failed.',
            errors: [],
          });
        }
      }
      window.addEventListener('message', onMessage);
      var timer = setInterval(function () {
        if (!finished && DETECT_CLOSED_POPUP && popup.closed) {
          finish();
          reject({
            code: 'window_closed',
            message: 'The authorization window was closed before it finished.',
            errors: [],
          });
        }
      }, 500);
    });
  }

  function showSuccess(item, connectionId) {
    emit('connect', { providerConfigKey: item.unique_key, connectionId: connectionId });
    show([
      el('p', { class: 'success-mark', 'aria-hidden': 'true', text: '✓' }),
      el('h1', { text: item.display_name + ' is connected' }),
      el('p', { class: 'muted', text: 'You can close this window now.' }),
      closable ? el('div', { class: 'actions' }, [closeButton('Done')]) : null,
    ]);
  }

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

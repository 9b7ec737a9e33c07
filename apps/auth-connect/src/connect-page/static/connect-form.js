// One integration's form on the connect page, loaded after connect-shell.js: the fields its auth mode asks
// for, their checks, and the submission — a POST for typed credentials, or the provider's own page in a
// popup (a full-page redirect when popups are blocked) for OAuth and app installs.
(function () {
  'use strict';

  var page = window.SwitchboardConnect;
  var API_ORIGIN = page.API_ORIGIN;
  var TOKEN_KEY = page.TOKEN_KEY;
  var closable = page.closable;
  var DETECT_CLOSED_POPUP = page.DETECT_CLOSED_POPUP;
  var state = page.state;
  var el = page.el;
  var emit = page.emit;
  var api = page.api;
  var withToken = page.withToken;
  var paramsQuery = page.paramsQuery;
  var show = page.show;
  var closeButton = page.closeButton;

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
        ? el('button', {
            type: 'button',
            class: 'secondary',
            text: 'Back',
            // The list is connect.js's, loaded after this file.
            onclick: function () {
              page.showList();
            },
          })
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
      // A refused key or password: back to the first credential field, ready to retype (the alert is
      // announced).
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

  page.showIntegration = showIntegration;
})();

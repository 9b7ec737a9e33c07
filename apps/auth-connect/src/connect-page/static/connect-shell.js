// The connect page's shell, loaded first: the settings read from the page and its URL, the shared state,
// the public API client, the DOM plumbing and the Connect UI messages to the customer's page. The other
// scripts (connect-form.js, then connect.js) take all of it from window.SwitchboardConnect.
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

  window.SwitchboardConnect = {
    query: query,
    API_ORIGIN: API_ORIGIN,
    ALLOWED_ORIGINS: ALLOWED_ORIGINS,
    TOKEN_KEY: TOKEN_KEY,
    app: app,
    embedded: embedded,
    closable: closable,
    DETECT_CLOSED_POPUP: DETECT_CLOSED_POPUP,
    state: state,
    el: el,
    emit: emit,
    api: api,
    withToken: withToken,
    paramsQuery: paramsQuery,
    closeControl: closeControl,
    requestClose: requestClose,
    show: show,
    showFatal: showFatal,
    closeButton: closeButton,
  };
})();

// require('soap') inside the sandbox: the part of the npm `soap` client's surface that scripts use
// (createClientAsync, client.<Operation>Async, addSoapHeader, addHttpHeader, setEndpoint, setSecurity with
// BasicAuthSecurity / BearerSecurity / WSSecurity), written over fast-xml-parser. Pure JavaScript: every
// HTTP request goes through the function that the prelude hands in (the script's own egress-checked
// uncontrolledFetch), so the WSDL and the calls reach only what the egress policy allows.
const { XMLParser } = require('fast-xml-parser');

const SOAP11_ENV = 'http://schemas.xmlsoap.org/soap/envelope/';
const SOAP12_ENV = 'http://www.w3.org/2003/05/soap-envelope';
const WSDL_SOAP12 = 'http://schemas.xmlsoap.org/wsdl/soap12/';
const WSSE_NS = 'http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd';
const WSU_NS = 'http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd';
const PASSWORD_TEXT =
  'http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordText';
const PASSWORD_DIGEST =
  'http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordDigest';
const NUMBER_TYPES = new Set([
  'int',
  'integer',
  'long',
  'short',
  'byte',
  'decimal',
  'double',
  'float',
  'unsignedInt',
  'unsignedLong',
  'unsignedShort',
  'unsignedByte',
  'nonNegativeInteger',
  'positiveInteger',
  'negativeInteger',
  'nonPositiveInteger',
]);

const local = (name) => {
  const i = String(name).indexOf(':');
  return i === -1 ? String(name) : String(name).slice(i + 1);
};
const prefixOf = (name) => {
  const i = String(name).indexOf(':');
  return i === -1 ? '' : String(name).slice(0, i);
};
const escapeXml = (s) =>
  String(s).replace(
    /[<>&"']/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c],
  );

// ---- the WSDL ----------------------------------------------------------------------------------------
// Every element as an array of nodes, attributes under '@', namespace prefixes kept (resolved by hand).
const wsdlParser = () =>
  new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '',
    attributesGroupName: '@',
    parseTagValue: false,
    parseAttributeValue: false,
    isArray: (_name, _path, _leaf, isAttribute) => !isAttribute,
  });
const kids = (node, name) => {
  const out = [];
  if (!node || typeof node !== 'object') return out;
  for (const key of Object.keys(node)) {
    if (key === '@' || key === '#text' || local(key) !== name) continue;
    for (const child of node[key]) out.push(child);
  }
  return out;
};
const attr = (node, name) => (node && node['@'] ? node['@'][name] : undefined);
// Namespace declarations seen from the root down to a node (enough for the documents WSDLs are).
const withNamespaces = (node, parent) => {
  const ns = Object.assign({}, parent);
  const attrs = (node && node['@']) || {};
  for (const key of Object.keys(attrs)) {
    if (key === 'xmlns') ns[''] = attrs[key];
    else if (key.startsWith('xmlns:')) ns[key.slice(6)] = attrs[key];
  }
  return ns;
};

const describeWsdl = (xml) => {
  const doc = wsdlParser().parse(xml);
  const root = kids(doc, 'definitions')[0];
  if (!root) throw new Error('the WSDL has no definitions element');
  const ns = withNamespaces(root, {});
  const targetNamespace = attr(root, 'targetNamespace') || '';

  // What the schemas say of elements: which repeat (arrays), which are numbers or booleans, and per
  // namespace whether child elements are qualified.
  const arrays = new Set();
  const numbers = new Set();
  const booleans = new Set();
  const qualified = {};
  const walk = (node, scopeNs) => {
    if (!node || typeof node !== 'object') return;
    const here = withNamespaces(node, scopeNs);
    for (const key of Object.keys(node)) {
      if (key === '@' || key === '#text') continue;
      for (const child of node[key]) {
        if (!child || typeof child !== 'object') continue;
        const name = local(key);
        if (name === 'schema') {
          qualified[attr(child, 'targetNamespace') || targetNamespace] =
            attr(child, 'elementFormDefault') === 'qualified';
        }
        if (name === 'element' && attr(child, 'name')) {
          const n = attr(child, 'name');
          const max = attr(child, 'maxOccurs');
          if (max !== undefined && max !== '0' && max !== '1') arrays.add(n);
          const type = attr(child, 'type');
          if (type && NUMBER_TYPES.has(local(type))) numbers.add(n);
          if (type && local(type) === 'boolean') booleans.add(n);
        }
        walk(child, here);
      }
    }
  };
  walk(root, ns);

  const messages = {};
  for (const m of kids(root, 'message')) messages[attr(m, 'name')] = kids(m, 'part');
  const portTypes = {};
  for (const pt of kids(root, 'portType')) {
    const ops = {};
    for (const op of kids(pt, 'operation')) {
      const input = kids(op, 'input')[0];
      ops[attr(op, 'name')] = { inputMessage: input ? local(attr(input, 'message') || '') : undefined };
    }
    portTypes[attr(pt, 'name')] = ops;
  }
  const bindings = {};
  for (const b of kids(root, 'binding')) {
    const soapBinding = kids(b, 'binding')[0];
    if (!soapBinding) continue; // an HTTP binding
    const bindingKey = Object.keys(b).find((k) => k !== '@' && local(k) === 'binding');
    const bns = withNamespaces(b, ns);
    const version = bns[prefixOf(bindingKey)] === WSDL_SOAP12 ? '1.2' : '1.1';
    const style = attr(soapBinding, 'style') || 'document';
    const ops = {};
    for (const op of kids(b, 'operation')) {
      const soapOp = kids(op, 'operation')[0];
      ops[attr(op, 'name')] = {
        soapAction: attr(soapOp, 'soapAction') || '',
        style: attr(soapOp, 'style') || style,
      };
    }
    bindings[attr(b, 'name')] = { version, portType: local(attr(b, 'type') || ''), ops };
  }
  // The first SOAP port of the first service (a SOAP 1.1 port before a 1.2 one, as the npm client).
  let chosen;
  for (const service of kids(root, 'service')) {
    for (const port of kids(service, 'port')) {
      const binding = bindings[local(attr(port, 'binding') || '')];
      const address = kids(port, 'address')[0];
      if (!binding || !address) continue;
      if (!chosen || (chosen.binding.version === '1.2' && binding.version === '1.1')) {
        chosen = { binding, endpoint: attr(address, 'location') };
      }
    }
  }
  if (!chosen) throw new Error('the WSDL has no SOAP port');
  const portType = portTypes[chosen.binding.portType] || {};
  const operations = {};
  for (const name of Object.keys(chosen.binding.ops)) {
    const bound = chosen.binding.ops[name];
    const parts = messages[(portType[name] || {}).inputMessage] || [];
    const elementPart = parts.find((p) => attr(p, 'element'));
    let element = { name, namespace: targetNamespace };
    if (bound.style !== 'rpc' && elementPart) {
      const qname = attr(elementPart, 'element');
      element = { name: local(qname), namespace: ns[prefixOf(qname)] || targetNamespace };
    }
    operations[name] = { soapAction: bound.soapAction, element };
  }
  return {
    version: chosen.binding.version,
    endpoint: chosen.endpoint,
    operations,
    namespaces: ns,
    qualified,
    schema: { arrays, numbers, booleans },
  };
};

// ---- envelopes ---------------------------------------------------------------------------------------
// A JS value as child elements: objects nest, arrays repeat, `attributes` become attributes, `$value` is the
// text, `$xml` goes in as it is.
const attributesXml = (attributes, used) => {
  let out = '';
  for (const key of Object.keys(attributes || {})) {
    const p = prefixOf(key);
    if (p) used.add(p);
    out += ' ' + key + '="' + escapeXml(attributes[key]) + '"';
  }
  return out;
};
const textOf = (value) => (value instanceof Date ? value.toISOString() : String(value));
const toXml = (value, used) => {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'object' || value instanceof Date) return escapeXml(textOf(value));
  let out = '';
  for (const key of Object.keys(value)) {
    if (key === 'attributes') continue;
    const v = value[key];
    if (key === '$value') {
      out += v === null || v === undefined ? '' : escapeXml(textOf(v));
      continue;
    }
    if (key === '$xml') {
      out += String(v);
      continue;
    }
    if (prefixOf(key)) used.add(prefixOf(key));
    for (const item of Array.isArray(v) ? v : [v]) {
      if (item === undefined) continue;
      const attrs =
        item && typeof item === 'object' && !(item instanceof Date)
          ? attributesXml(item.attributes, used)
          : '';
      out += '<' + key + attrs + '>' + toXml(item, used) + '</' + key + '>';
    }
  }
  return out;
};
const headerXml = (header, used) => (typeof header === 'string' ? header : toXml(header, used));

// ---- answers -----------------------------------------------------------------------------------------
const answerParser = (schema) =>
  new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '',
    attributesGroupName: 'attributes',
    textNodeName: '$value',
    parseTagValue: false,
    parseAttributeValue: false,
    transformTagName: local,
    isArray: (name, _path, _leaf, isAttribute) => !isAttribute && schema.arrays.has(name),
  });
// Drops namespace declarations and converts the schema's numbers and booleans, as the npm client does.
const tidy = (value, name, schema) => {
  if (Array.isArray(value)) return value.map((v) => tidy(v, name, schema));
  if (value && typeof value === 'object') {
    const out = {};
    for (const key of Object.keys(value)) {
      if (key === 'attributes') {
        const attrs = {};
        for (const a of Object.keys(value.attributes)) {
          if (a !== 'xmlns' && !a.startsWith('xmlns:')) attrs[a] = value.attributes[a];
        }
        if (Object.keys(attrs).length > 0) out.attributes = attrs;
      } else if (key === '$value') {
        out.$value = tidy(value.$value, name, schema);
      } else {
        out[key] = tidy(value[key], key, schema);
      }
    }
    if (Object.keys(out).length === 1 && out.$value !== undefined) return out.$value;
    if (Object.keys(out).length === 0) return '';
    return out;
  }
  if (typeof value === 'string') {
    if (
      schema.booleans.has(name) &&
      (value === 'true' || value === 'false' || value === '1' || value === '0')
    ) {
      return value === 'true' || value === '1';
    }
    if (schema.numbers.has(name) && value.trim() !== '' && !Number.isNaN(Number(value))) return Number(value);
  }
  return value;
};

const faultError = (fault, root, body, status) => {
  // SOAP 1.1: faultcode/faultstring; SOAP 1.2: Code/Value and Reason/Text.
  const text = (v) =>
    v && typeof v === 'object' ? (v.$value !== undefined ? v.$value : JSON.stringify(v)) : v;
  const code = fault.faultcode !== undefined ? text(fault.faultcode) : text(fault.Code && fault.Code.Value);
  const reason =
    fault.faultstring !== undefined ? text(fault.faultstring) : text(fault.Reason && fault.Reason.Text);
  const error = new Error(
    code + ': ' + reason + (fault.detail !== undefined ? ': ' + JSON.stringify(fault.detail) : ''),
  );
  error.root = root;
  error.body = body;
  error.response = { status };
  return error;
};

// ---- security ------------------------------------------------------------------------------------------
class BasicAuthSecurity {
  constructor(username, password) {
    this._username = username;
    this._password = password;
  }
  addHeaders(headers, deps) {
    headers.Authorization = 'Basic ' + deps.base64(this._username + ':' + this._password);
  }
  toXML() {
    return '';
  }
}
class BearerSecurity {
  constructor(token) {
    this._token = token;
  }
  addHeaders(headers) {
    headers.Authorization = 'Bearer ' + this._token;
  }
  toXML() {
    return '';
  }
}
const xmlDate = (d) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
class WSSecurity {
  constructor(username, password, options) {
    let opts = options || {};
    if (typeof opts === 'string') opts = { passwordType: opts };
    this._username = username;
    this._password = password;
    this._passwordType = opts.passwordType === 'PasswordDigest' ? 'PasswordDigest' : 'PasswordText';
    this._hasTimeStamp = opts.hasTimeStamp === undefined ? true : !!opts.hasTimeStamp;
    this._hasTokenCreated = opts.hasTokenCreated === undefined ? true : !!opts.hasTokenCreated;
    this._hasNonce = !!opts.hasNonce;
    this._mustUnderstand = !!opts.mustUnderstand;
  }
  addHeaders() {}
  toXML(deps) {
    const now = new Date();
    const created = xmlDate(now);
    let timestamp = '';
    if (this._hasTimeStamp) {
      timestamp =
        '<wsu:Timestamp wsu:Id="Timestamp-' +
        now.getTime() +
        '"><wsu:Created>' +
        created +
        '</wsu:Created><wsu:Expires>' +
        xmlDate(new Date(now.getTime() + 600000)) +
        '</wsu:Expires></wsu:Timestamp>';
    }
    const nonce = this._hasNonce || this._passwordType === 'PasswordDigest' ? deps.nonce() : undefined;
    let password;
    if (this._passwordType === 'PasswordDigest') {
      password =
        '<wsse:Password Type="' +
        PASSWORD_DIGEST +
        '">' +
        deps.passwordDigest(nonce, created, this._password) +
        '</wsse:Password>';
    } else {
      password =
        '<wsse:Password Type="' + PASSWORD_TEXT + '">' + escapeXml(this._password) + '</wsse:Password>';
    }
    return (
      '<wsse:Security xmlns:wsse="' +
      WSSE_NS +
      '" xmlns:wsu="' +
      WSU_NS +
      '"' +
      (this._mustUnderstand ? ' soap:mustUnderstand="1"' : '') +
      '>' +
      timestamp +
      '<wsse:UsernameToken wsu:Id="SecurityToken-' +
      now.getTime() +
      '"><wsse:Username>' +
      escapeXml(this._username) +
      '</wsse:Username>' +
      password +
      (nonce
        ? '<wsse:Nonce EncodingType="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary">' +
          nonce +
          '</wsse:Nonce>'
        : '') +
      (this._hasTokenCreated ? '<wsu:Created>' + created + '</wsu:Created>' : '') +
      '</wsse:UsernameToken></wsse:Security>'
    );
  }
}

// ---- the client --------------------------------------------------------------------------------------
// deps: fetch(url, { method, headers, body }) → { status, headers: { get }, text() }, base64(string),
// nonce() → base64 of 16 random bytes, passwordDigest(nonceBase64, created, password) → base64 sha1.
const createSoapModule = (deps) => {
  const invoke = async (state, name, args, extraHeaders) => {
    const op = state.wsdl.operations[name];
    const version = state.wsdl.version;
    const used = new Set();
    const nsMap = state.wsdl.namespaces;
    const qualified = state.wsdl.qualified[op.element.namespace];
    const inner = toXml(args === undefined || args === null ? {} : args, used);
    // Qualified children (elementFormDefault="qualified") inherit a default namespace; unqualified ones
    // sit under a prefixed operation element with no default namespace.
    const bodyTag = qualified === false ? 'op:' + op.element.name : op.element.name;
    const bodyNs =
      qualified === false
        ? ' xmlns:op="' + escapeXml(op.element.namespace) + '"'
        : ' xmlns="' + escapeXml(op.element.namespace) + '"';
    const headers = state.soapHeaders.map((h) => headerXml(h, used)).join('');
    const security = state.security && state.security.toXML ? state.security.toXML(deps) : '';
    let declarations = '';
    for (const p of used) {
      if (p !== 'xml' && p !== 'soap' && p !== 'xsi' && nsMap[p])
        declarations += ' xmlns:' + p + '="' + escapeXml(nsMap[p]) + '"';
    }
    const envNs = version === '1.2' ? SOAP12_ENV : SOAP11_ENV;
    const request =
      '<?xml version="1.0" encoding="utf-8"?>' +
      '<soap:Envelope xmlns:soap="' +
      envNs +
      '" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"' +
      declarations +
      '>' +
      (headers || security ? '<soap:Header>' + headers + security + '</soap:Header>' : '') +
      '<soap:Body><' +
      bodyTag +
      bodyNs +
      '>' +
      inner +
      '</' +
      bodyTag +
      '></soap:Body></soap:Envelope>';
    const httpHeaders = Object.assign({}, state.httpHeaders);
    if (version === '1.2') {
      httpHeaders['Content-Type'] =
        'application/soap+xml; charset=utf-8' + (op.soapAction ? '; action="' + op.soapAction + '"' : '');
    } else {
      httpHeaders['Content-Type'] = 'text/xml; charset=utf-8';
      httpHeaders.SOAPAction = '"' + op.soapAction + '"';
    }
    if (state.security && state.security.addHeaders) state.security.addHeaders(httpHeaders, deps);
    Object.assign(httpHeaders, extraHeaders || {});
    const response = await deps.fetch(state.endpoint, {
      method: 'POST',
      headers: httpHeaders,
      body: request,
    });
    const body = await response.text();
    let root;
    try {
      root = tidy(answerParser(state.wsdl.schema).parse(body), '', state.wsdl.schema);
    } catch (e) {
      root = undefined;
    }
    const envelope = root && typeof root === 'object' ? root.Envelope : undefined;
    const soapBody = envelope && typeof envelope === 'object' ? envelope.Body : undefined;
    if (soapBody && typeof soapBody === 'object' && soapBody.Fault !== undefined) {
      throw faultError(soapBody.Fault, root, body, response.status);
    }
    if (response.status < 200 || response.status >= 300 || !soapBody) {
      const error = new Error(
        'SOAP request failed: HTTP ' + response.status + (soapBody ? '' : ', no SOAP envelope in the answer'),
      );
      error.response = { status: response.status };
      error.body = body;
      throw error;
    }
    // The body's one element (e.g. GetPriceResponse) is the result, as the npm client answers it.
    const keys = typeof soapBody === 'object' ? Object.keys(soapBody).filter((k) => k !== 'attributes') : [];
    const result = keys.length === 1 ? soapBody[keys[0]] : soapBody;
    const soapHeader = envelope.Header === undefined ? undefined : envelope.Header;
    state.lastRequest = request;
    state.lastResponse = body;
    return [result === '' ? null : result, body, soapHeader, request];
  };

  const createClientAsync = async (url, options) => {
    const opts = options || {};
    const response = await deps.fetch(String(url), {
      method: 'GET',
      headers: Object.assign({}, opts.wsdl_headers),
      body: null,
    });
    if (response.status < 200 || response.status >= 300)
      throw new Error('could not fetch the WSDL ' + url + ': HTTP ' + response.status);
    const wsdl = describeWsdl(await response.text());
    const state = {
      wsdl,
      endpoint: opts.endpoint || wsdl.endpoint,
      httpHeaders: {},
      soapHeaders: [],
      security: undefined,
    };
    const client = {
      addSoapHeader: (header) => state.soapHeaders.push(header) - 1,
      getSoapHeaders: () => state.soapHeaders.map((h) => (typeof h === 'string' ? h : toXml(h, new Set()))),
      clearSoapHeaders: () => {
        state.soapHeaders = [];
      },
      addHttpHeader: (name, value) => {
        state.httpHeaders[name] = value;
      },
      getHttpHeaders: () => Object.assign({}, state.httpHeaders),
      clearHttpHeaders: () => {
        state.httpHeaders = {};
      },
      setEndpoint: (endpoint) => {
        state.endpoint = endpoint;
      },
      setSecurity: (security) => {
        state.security = security;
      },
      describe: () => {
        const ops = {};
        for (const name of Object.keys(wsdl.operations))
          ops[name] = { soapAction: wsdl.operations[name].soapAction };
        return ops;
      },
      get lastRequest() {
        return state.lastRequest;
      },
      get lastResponse() {
        return state.lastResponse;
      },
    };
    for (const name of Object.keys(wsdl.operations)) {
      client[name + 'Async'] = (args, _options, extraHeaders) => invoke(state, name, args, extraHeaders);
      client[name] = (args, callback, _options, extraHeaders) => {
        const done =
          typeof callback === 'function' ? callback : typeof _options === 'function' ? _options : undefined;
        const promise = invoke(state, name, args, extraHeaders);
        if (done)
          promise.then(
            (r) => done(null, r[0], r[1], r[2], r[3]),
            (e) => done(e),
          );
        return promise;
      };
    }
    return client;
  };
  const createClient = (url, options, callback) => {
    const done = typeof options === 'function' ? options : callback;
    const promise = createClientAsync(url, typeof options === 'function' ? undefined : options);
    if (done)
      promise.then(
        (c) => done(null, c),
        (e) => done(e),
      );
  };
  const security = { BasicAuthSecurity, BearerSecurity, WSSecurity };
  return { createClientAsync, createClient, BasicAuthSecurity, BearerSecurity, WSSecurity, security };
};

module.exports = { createSoapModule };
